// A restricted reader for Python pickles (protocols 2 to 5) that hold only plain data: dict,
// list, tuple, str, bytes (protocol 3+), int (any size), float, bool and None. It is a data
// parser, not an unpickler: it never imports, looks up or calls anything. Every opcode that
// would (GLOBAL, STACK_GLOBAL, INST, OBJ, NEWOBJ, NEWOBJ_EX, REDUCE, BUILD, PERSID, BINPERSID,
// EXT1/2/4) is refused with a PickleError naming the opcode and its byte offset, as are sets,
// out-of-band buffers and the protocol 0/1 text opcodes.
//
// Bounded: no recursion (the machine is a stack; cycles are refused after parsing); each length
// field is checked against the bytes that remain, so a hostile length cannot allocate more than
// the input's size; the number of values is at most the number of opcodes.
//
// PyTorch's memory snapshots (torch.cuda.memory._dump_snapshot) are such pickles.
#pragma once

#include <cstdint>
#include <deque>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ss::pickle {

// Bad, truncated or refused input. The message names the input, the byte offset and the opcode.
class PickleError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Value;

// Kept small (72 bytes): a snapshot pickle holds millions of values (one per trace field).
struct Value {
  enum class Kind : std::uint8_t { None, Bool, Int, BigInt, Float, Str, Bytes, List, Tuple, Dict };
  Kind kind = Kind::None;
  bool boolean = false;
  union {
    std::int64_t integer = 0;  // Int (and Bool as 0/1)
    double real;               // Float
  };
  // Str: UTF-8 as in the file. Bytes: the bytes. BigInt: the little-endian two's-complement
  // bytes of an int that does not fit in 64 bits (pickle's LONG1 / LONG4 payload).
  std::string text;
  // List, Tuple: the elements. Dict: key, value, key, value, ... in insertion order.
  std::vector<const Value*> items;

  bool is_int() const { return kind == Kind::Int; }
  // The value of an int in 0 .. 2^64 - 1 (an Int, a non-negative one, or a BigInt that fits in
  // 64 bits unsigned, such as C++'s uint64_t(-1) that PyTorch writes for an unknown line); false
  // for anything else.
  bool as_uint64(std::uint64_t& out) const;
  bool is_str() const { return kind == Kind::Str; }
  bool is_list_like() const { return kind == Kind::List || kind == Kind::Tuple; }
  std::size_t dict_size() const { return kind == Kind::Dict ? items.size() / 2 : 0; }
  const Value& key(std::size_t i) const { return *items[2 * i]; }
  const Value& value(std::size_t i) const { return *items[2 * i + 1]; }
  // The value of str key `key` in a dict (the last one set wins, as in Python); null when absent
  // or when this is not a dict.
  const Value* get(std::string_view key) const;
};

const char* kind_name(Value::Kind k);

// A parsed pickle: every value lives in `arena`; `root` points into it. Containers refer to
// their elements by pointer, so a value the pickle shares through its memo (one frame dict
// referenced by many allocations) is stored once.
struct Document {
  std::deque<Value> arena;
  const Value* root = nullptr;
  int protocol = 0;
  std::size_t opcodes = 0;
};

// Parses `bytes` (one pickle, up to its STOP opcode; trailing bytes are ignored, as pickle.load
// does). `label` names the input in error messages. Throws PickleError.
Document parse(std::string_view bytes, const std::string& label);

}  // namespace ss::pickle
