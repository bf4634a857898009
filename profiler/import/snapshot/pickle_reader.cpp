#include "profiler/import/snapshot/pickle_reader.h"

#include <bit>
#include <unordered_map>

namespace ss::pickle {

const char* kind_name(Value::Kind k) {
  switch (k) {
    case Value::Kind::None: return "None";
    case Value::Kind::Bool: return "bool";
    case Value::Kind::Int: return "int";
    case Value::Kind::BigInt: return "int";
    case Value::Kind::Float: return "float";
    case Value::Kind::Str: return "str";
    case Value::Kind::Bytes: return "bytes";
    case Value::Kind::List: return "list";
    case Value::Kind::Tuple: return "tuple";
    case Value::Kind::Dict: return "dict";
  }
  return "?";
}

const Value* Value::get(std::string_view key) const {
  if (kind != Kind::Dict) return nullptr;
  for (std::size_t i = dict_size(); i-- > 0;)
    if (items[2 * i]->kind == Kind::Str && items[2 * i]->text == key) return items[2 * i + 1];
  return nullptr;
}

bool Value::as_uint64(std::uint64_t& out) const {
  if (kind == Kind::Int) {
    if (integer < 0) return false;
    out = static_cast<std::uint64_t>(integer);
    return true;
  }
  if (kind != Kind::BigInt) return false;
  // Little-endian two's complement: fits when the sign bit is clear and every byte past the
  // eighth is zero (Python writes 2^64 - 1 as 8 x 0xff and a 0x00 sign byte).
  if (text.empty() || (static_cast<unsigned char>(text.back()) & 0x80)) return false;
  for (std::size_t k = 8; k < text.size(); ++k)
    if (text[k] != 0) return false;
  std::uint64_t u = 0;
  for (std::size_t k = 0; k < text.size() && k < 8; ++k) u |= std::uint64_t(static_cast<unsigned char>(text[k])) << (8 * k);
  out = u;
  return true;
}

namespace {

// Opcode names for messages (pickletools' names).
const char* opcode_name(unsigned char op) {
  switch (op) {
    case 'I': return "INT";
    case 'J': return "BININT";
    case 'K': return "BININT1";
    case 'M': return "BININT2";
    case 'L': return "LONG";
    case 0x8a: return "LONG1";
    case 0x8b: return "LONG4";
    case 'S': return "STRING";
    case 'T': return "BINSTRING";
    case 'U': return "SHORT_BINSTRING";
    case 'B': return "BINBYTES";
    case 'C': return "SHORT_BINBYTES";
    case 0x8e: return "BINBYTES8";
    case 0x96: return "BYTEARRAY8";
    case 0x97: return "NEXT_BUFFER";
    case 0x98: return "READONLY_BUFFER";
    case 'N': return "NONE";
    case 0x88: return "NEWTRUE";
    case 0x89: return "NEWFALSE";
    case 'V': return "UNICODE";
    case 0x8c: return "SHORT_BINUNICODE";
    case 'X': return "BINUNICODE";
    case 0x8d: return "BINUNICODE8";
    case 'F': return "FLOAT";
    case 'G': return "BINFLOAT";
    case ']': return "EMPTY_LIST";
    case 'a': return "APPEND";
    case 'e': return "APPENDS";
    case 'l': return "LIST";
    case ')': return "EMPTY_TUPLE";
    case 't': return "TUPLE";
    case 0x85: return "TUPLE1";
    case 0x86: return "TUPLE2";
    case 0x87: return "TUPLE3";
    case '}': return "EMPTY_DICT";
    case 'd': return "DICT";
    case 's': return "SETITEM";
    case 'u': return "SETITEMS";
    case 0x8f: return "EMPTY_SET";
    case 0x90: return "ADDITEMS";
    case 0x91: return "FROZENSET";
    case '0': return "POP";
    case '2': return "DUP";
    case '(': return "MARK";
    case '1': return "POP_MARK";
    case 'g': return "GET";
    case 'h': return "BINGET";
    case 'j': return "LONG_BINGET";
    case 'p': return "PUT";
    case 'q': return "BINPUT";
    case 'r': return "LONG_BINPUT";
    case 0x94: return "MEMOIZE";
    case 0x82: return "EXT1";
    case 0x83: return "EXT2";
    case 0x84: return "EXT4";
    case 'c': return "GLOBAL";
    case 0x93: return "STACK_GLOBAL";
    case 'R': return "REDUCE";
    case 'b': return "BUILD";
    case 'i': return "INST";
    case 'o': return "OBJ";
    case 0x81: return "NEWOBJ";
    case 0x92: return "NEWOBJ_EX";
    case 0x80: return "PROTO";
    case '.': return "STOP";
    case 0x95: return "FRAME";
    case 'P': return "PERSID";
    case 'Q': return "BINPERSID";
  }
  return nullptr;
}

std::string hex_byte(unsigned char c) {
  static const char* digits = "0123456789abcdef";
  return std::string("0x") + digits[c >> 4] + digits[c & 15];
}

// UTF-8 as Python's pickle accepts it ('utf-8' with 'surrogatepass': encoded surrogates allowed).
bool valid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t n = 0;
    std::uint32_t cp = 0;
    if ((c & 0xe0) == 0xc0) n = 1, cp = c & 0x1f;
    else if ((c & 0xf0) == 0xe0) n = 2, cp = c & 0x0f;
    else if ((c & 0xf8) == 0xf0) n = 3, cp = c & 0x07;
    else return false;
    if (i + n >= s.size()) return false;  // the sequence runs past the end
    for (std::size_t k = 1; k <= n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3f);
    }
    if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10ffff))) return false;
    i += n + 1;
  }
  return true;
}

class Parser {
 public:
  Parser(std::string_view in, const std::string& label) : in_(in), label_(label) {}

  Document run() {
    if (in_.empty()) fail_at(0, "empty input: not a pickle");
    while (true) {
      op_pos_ = pos_;
      const unsigned char op = byte();
      ++doc_.opcodes;
      if (step(op)) break;
    }
    if (stack_.size() != 1 || !marks_.empty())
      fail_at(op_pos_, "STOP with " + std::to_string(stack_.size()) + " values on the stack (expected exactly one)");
    doc_.root = stack_.back();
    refuse_cycles(doc_.root);
    return std::move(doc_);
  }

 private:
  std::string_view in_;
  const std::string& label_;
  std::size_t pos_ = 0, op_pos_ = 0;
  unsigned char op_ = 0;
  Document doc_;
  std::vector<Value*> stack_;
  std::vector<std::size_t> marks_;
  // The memo: MEMOIZE (protocol 4+) and Python's BINPUT use keys 0, 1, 2, ...: a vector; any
  // other key (a hostile LONG_BINPUT of 4 billion) goes to a hash map, never sizing the vector.
  std::vector<Value*> memo_dense_;
  std::unordered_map<std::uint64_t, Value*> memo_sparse_;

  [[noreturn]] void fail_at(std::size_t at, const std::string& what) const {
    throw PickleError("'" + label_ + "': pickle byte " + std::to_string(at) + ": " + what);
  }
  [[noreturn]] void fail(const std::string& what) const {
    const char* name = opcode_name(op_);
    fail_at(op_pos_, std::string("opcode ") + (name ? name : "?") + " (" + hex_byte(op_) + "): " + what);
  }

  std::size_t remaining() const { return in_.size() - pos_; }
  void need(std::uint64_t n) const {
    if (n > remaining())
      fail("truncated: needs " + std::to_string(n) + " more bytes, " + std::to_string(remaining()) + " left");
  }
  unsigned char byte() {
    if (pos_ >= in_.size()) fail_at(pos_, "truncated: the pickle ends without a STOP opcode");
    return static_cast<unsigned char>(in_[pos_++]);
  }
  std::uint64_t le(std::size_t n) {
    need(n);
    std::uint64_t v = 0;
    for (std::size_t k = 0; k < n; ++k) v |= std::uint64_t(static_cast<unsigned char>(in_[pos_ + k])) << (8 * k);
    pos_ += n;
    return v;
  }
  std::string_view take(std::uint64_t n) {
    need(n);  // bounds every length field by the input that remains
    std::string_view s = in_.substr(pos_, static_cast<std::size_t>(n));
    pos_ += static_cast<std::size_t>(n);
    return s;
  }

  Value* make(Value::Kind k) {
    doc_.arena.emplace_back();
    doc_.arena.back().kind = k;
    return &doc_.arena.back();
  }
  void push(Value* v) { stack_.push_back(v); }
  std::size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  Value* pop() {
    if (stack_.size() <= floor()) fail("stack underflow");
    Value* v = stack_.back();
    stack_.pop_back();
    return v;
  }
  Value* top() {
    if (stack_.size() <= floor()) fail("stack underflow");
    return stack_.back();
  }
  // The values pushed since the last MARK, removing them and the mark.
  std::vector<Value*> pop_mark() {
    if (marks_.empty()) fail("no MARK on the stack");
    const std::size_t m = marks_.back();
    marks_.pop_back();
    std::vector<Value*> items(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return items;
  }
  Value* make_tuple(std::vector<Value*> items) {
    Value* t = make(Value::Kind::Tuple);
    t->items.assign(items.begin(), items.end());
    return t;
  }
  void put_memo(std::uint64_t key) {
    Value* v = top();
    if (key < memo_dense_.size())
      memo_dense_[key] = v;
    else if (key == memo_dense_.size() && !memo_sparse_.count(key))
      memo_dense_.push_back(v);
    else
      memo_sparse_[key] = v;
  }
  std::uint64_t memo_size() const { return memo_dense_.size() + memo_sparse_.size(); }  // Python's len(memo)
  void get_memo(std::uint64_t key) {
    if (key < memo_dense_.size()) {
      push(memo_dense_[key]);
      return;
    }
    auto it = memo_sparse_.find(key);
    if (it == memo_sparse_.end()) fail("memo key " + std::to_string(key) + " was never stored");
    push(it->second);
  }
  void push_str(std::string_view s) {
    if (!valid_utf8(s)) fail("string is not valid UTF-8");
    Value* v = make(Value::Kind::Str);
    v->text = s;
    push(v);
  }
  void push_bytes(std::string_view s) {
    Value* v = make(Value::Kind::Bytes);
    v->text = s;
    push(v);
  }
  void push_int(std::int64_t i) {
    Value* v = make(Value::Kind::Int);
    v->integer = i;
    push(v);
  }
  // LONG1 / LONG4 payload: little-endian two's complement of any length.
  void push_long(std::string_view b) {
    if (b.size() <= 8) {
      std::uint64_t u = 0;
      for (std::size_t k = 0; k < b.size(); ++k) u |= std::uint64_t(static_cast<unsigned char>(b[k])) << (8 * k);
      if (!b.empty() && b.size() < 8 && (static_cast<unsigned char>(b.back()) & 0x80)) u |= ~std::uint64_t(0) << (8 * b.size());
      push_int(static_cast<std::int64_t>(u));
      return;
    }
    Value* v = make(Value::Kind::BigInt);
    v->text = b;
    push(v);
  }
  Value* container(Value* v, Value::Kind want) {
    if (v->kind != want)
      fail(std::string("expects a ") + kind_name(want) + " below its items, found a " + kind_name(v->kind));
    return v;
  }
  void set_items(Value* dict, const std::vector<Value*>& kv) {
    if (kv.size() % 2) fail("odd number of values for key/value pairs");
    dict->items.insert(dict->items.end(), kv.begin(), kv.end());
  }

  [[noreturn]] void refuse_global() {
    fail("refused: this opcode imports or calls Python code (a class, a function, __reduce__); a plain-data"
         " pickle (dict, list, tuple, str, bytes, int, float, bool, None) never contains it, and nothing in the"
         " file is ever executed");
  }

  // Runs one opcode; true at STOP.
  bool step(unsigned char op) {
    op_ = op;
    switch (op) {
      case 0x80: {  // PROTO
        const unsigned char p = byte();
        if (p < 2 || p > 5) fail("protocol " + std::to_string(p) + " is not supported (2 to 5 are)");
        doc_.protocol = p;
        return false;
      }
      case 0x95: {  // FRAME: a length prefix for buffering; the opcodes inside are read as usual
        const std::uint64_t n = le(8);
        if (n > remaining()) fail("truncated: frame of " + std::to_string(n) + " bytes, " + std::to_string(remaining()) + " left");
        return false;
      }
      case '.': return true;  // STOP
      case 'N': push(make(Value::Kind::None)); return false;
      case 0x88:
      case 0x89: {
        Value* v = make(Value::Kind::Bool);
        v->boolean = op == 0x88;
        v->integer = v->boolean ? 1 : 0;
        push(v);
        return false;
      }
      case 'J': push_int(static_cast<std::int32_t>(static_cast<std::uint32_t>(le(4)))); return false;
      case 'K': push_int(static_cast<std::int64_t>(le(1))); return false;
      case 'M': push_int(static_cast<std::int64_t>(le(2))); return false;
      case 0x8a: push_long(take(le(1))); return false;
      case 0x8b: {
        const auto n = static_cast<std::int32_t>(static_cast<std::uint32_t>(le(4)));
        if (n < 0) fail("negative length");
        push_long(take(static_cast<std::uint64_t>(n)));
        return false;
      }
      case 'G': {
        need(8);
        std::uint64_t bits = 0;  // big-endian IEEE 754
        for (std::size_t k = 0; k < 8; ++k) bits = (bits << 8) | static_cast<unsigned char>(in_[pos_ + k]);
        pos_ += 8;
        const double d = std::bit_cast<double>(bits);
        Value* v = make(Value::Kind::Float);
        v->real = d;
        push(v);
        return false;
      }
      case 0x8c: push_str(take(le(1))); return false;
      case 'X': push_str(take(le(4))); return false;
      case 0x8d: push_str(take(le(8))); return false;
      case 'C': push_bytes(take(le(1))); return false;
      case 'B': push_bytes(take(le(4))); return false;
      case 0x8e:
      case 0x96: push_bytes(take(le(8))); return false;  // bytearray: read as bytes
      case ']': push(make(Value::Kind::List)); return false;
      case '}': push(make(Value::Kind::Dict)); return false;
      case ')': push(make(Value::Kind::Tuple)); return false;
      case 0x85:
      case 0x86:
      case 0x87: {
        const std::size_t n = op - 0x84u;
        if (stack_.size() < floor() + n) fail("stack underflow");
        std::vector<Value*> items(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
        stack_.resize(stack_.size() - n);
        push(make_tuple(std::move(items)));
        return false;
      }
      case 't': push(make_tuple(pop_mark())); return false;
      case 'l': {
        Value* l = make(Value::Kind::List);
        for (Value* v : pop_mark()) l->items.push_back(v);
        push(l);
        return false;
      }
      case 'd': {
        Value* d = make(Value::Kind::Dict);
        set_items(d, pop_mark());
        push(d);
        return false;
      }
      case 'a': {
        Value* v = pop();
        container(top(), Value::Kind::List)->items.push_back(v);
        return false;
      }
      case 'e': {
        std::vector<Value*> items = pop_mark();
        Value* l = container(top(), Value::Kind::List);
        l->items.insert(l->items.end(), items.begin(), items.end());
        return false;
      }
      case 's': {
        Value* v = pop();
        Value* k = pop();
        Value* d = container(top(), Value::Kind::Dict);
        d->items.push_back(k);
        d->items.push_back(v);
        return false;
      }
      case 'u': {
        std::vector<Value*> kv = pop_mark();
        set_items(container(top(), Value::Kind::Dict), kv);
        return false;
      }
      case '(': marks_.push_back(stack_.size()); return false;
      case '1': pop_mark(); return false;
      case '0':
        if (stack_.size() > floor()) stack_.pop_back();
        else if (!marks_.empty()) marks_.pop_back();  // as CPython: POP on an empty frame drops the mark
        else fail("stack underflow");
        return false;
      case '2': push(top()); return false;
      case 'q': put_memo(le(1)); return false;
      case 'r': put_memo(le(4)); return false;
      case 0x94: put_memo(memo_size()); return false;
      case 'h': get_memo(le(1)); return false;
      case 'j': get_memo(le(4)); return false;
      case 'c':
      case 0x93:
      case 'i':
      case 'o':
      case 0x81:
      case 0x92:
      case 'R':
      case 'b':
      case 'P':
      case 'Q':
      case 0x82:
      case 0x83:
      case 0x84: refuse_global();
      case 0x8f:
      case 0x90:
      case 0x91: fail("sets are not accepted (only dict, list, tuple, str, bytes, int, float, bool, None)");
      case 0x97:
      case 0x98: fail("out-of-band buffers are not accepted");
      case 'I':
      case 'L':
      case 'S':
      case 'T':
      case 'U':
      case 'V':
      case 'F':
      case 'g':
      case 'p': fail("protocol 0/1 text opcode: not accepted (write the file with protocol 2 or later)");
      default: break;
    }
    fail_at(op_pos_, "unknown opcode " + hex_byte(op) + ": not a pickle, or a damaged one");
  }

  // A container that holds itself (through the memo) has no finite form; refuse it, so that every
  // consumer can walk the values without a visited set. Iterative three-colour depth-first search.
  void refuse_cycles(const Value* root) {
    enum : std::uint8_t { White = 0, Grey = 1, Black = 2 };
    std::unordered_map<const Value*, std::uint8_t> colour;
    struct Frame {
      const Value* v;
      std::size_t next;
    };
    auto children = [](const Value* v) { return v->items.size(); };
    auto child = [](const Value* v, std::size_t i) { return v->items[i]; };
    auto is_container = [](const Value* v) {
      return v->kind == Value::Kind::List || v->kind == Value::Kind::Tuple || v->kind == Value::Kind::Dict;
    };
    if (!is_container(root)) return;
    std::vector<Frame> st{{root, 0}};
    colour[root] = Grey;
    while (!st.empty()) {
      Frame& f = st.back();
      if (f.next == children(f.v)) {
        colour[f.v] = Black;
        st.pop_back();
        continue;
      }
      const Value* c = child(f.v, f.next++);
      if (!is_container(c)) continue;
      auto& col = colour[c];
      if (col == Grey) fail_at(op_pos_, std::string("at STOP: a ") + kind_name(c->kind) + " contains itself: recursive structures are not accepted");
      if (col == White) {
        col = Grey;
        st.push_back({c, 0});
      }
    }
  }
};

}  // namespace

Document parse(std::string_view bytes, const std::string& label) { return Parser(bytes, label).run(); }

}  // namespace ss::pickle
