"""A small local tokenizer and text data set for torchtitan's debug model (the wheel ships neither,
and nothing can be downloaded): made at test time, deterministic, in a folder given by the caller.

    <dir>/tokenizer/{tokenizer.json, tokenizer_config.json}   byte-level BPE, vocabulary <= 2048
    <dir>/data/train_text.json                                JSON lines {"text": ...}

torchtitan reads the tokenizer folder as `hf_assets_path` and the data folder as the `c4_test`
data set's `dataset_path` (Hugging Face `datasets` reads a folder of JSON files; a file whose name
contains "test" would become the test split, so this one is called train_text.json).
"""
import json
import os
import random

VOCAB = 2000  # the debug model's vocabulary is 2048
BOS, EOS = "<|begin_of_text|>", "<|end_of_text|>"
WORDS = ("shard gather scatter reduce layer module memory step budget gradient optimizer tensor rank device "
         "kernel stream forward backward recompute parameter activation bucket prefetch overlap exposed "
         "planner simulator profile trace sequence token attention feed norm embedding head train model").split()


def _texts(n, seed):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        words = [rng.choice(WORDS) + (str(rng.randrange(100)) if rng.random() < 0.2 else "") for _ in range(rng.randrange(40, 200))]
        out.append(" ".join(words).capitalize() + ".")
    return out


def make_assets(folder, documents=400, seed=0):
    """Writes the tokenizer and the data set under `folder` (once); returns (tokenizer_dir, data_dir)."""
    tok_dir, data_dir = os.path.join(folder, "tokenizer"), os.path.join(folder, "data")
    done = os.path.join(folder, ".complete")
    if os.path.exists(done):
        return tok_dir, data_dir
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    os.makedirs(tok_dir, exist_ok=True)
    os.makedirs(data_dir, exist_ok=True)
    texts = _texts(documents, seed)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=[BOS, EOS],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer)
    tok.save(os.path.join(tok_dir, "tokenizer.json"))
    with open(os.path.join(tok_dir, "tokenizer_config.json"), "w") as f:
        json.dump({"bos_token": BOS, "eos_token": EOS, "add_bos_token": True, "add_eos_token": True,
                   "tokenizer_class": "PreTrainedTokenizerFast"}, f)
    with open(os.path.join(data_dir, "train_text.json"), "w") as f:
        for t in texts:
            f.write(json.dumps({"text": t}) + "\n")
    open(done, "w").close()
    return tok_dir, data_dir


if __name__ == "__main__":
    import sys

    print(make_assets(sys.argv[1]))
