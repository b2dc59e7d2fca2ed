"""Test doubles for backends' tokenizer memos: the real tokenizer counting what it is asked
to tokenize, and a backend that only tokenizes."""

from llm_agents.backends.base import Backend


class CountingTokenizer:
    """The real tokenizer, counting the texts it is asked to tokenize."""

    def __init__(self, tok):
        self.tok, self.calls = tok, []

    def __call__(self, text, **kw):
        self.calls += [text] if isinstance(text, str) else list(text)
        return self.tok(text, **kw)

    def __getattr__(self, name):
        return getattr(self.tok, name)

    def __setattr__(self, name, value):
        if name in ("tok", "calls"):
            object.__setattr__(self, name, value)
        else:
            setattr(self.tok, name, value)


class IdsOnly(Backend):
    def __init__(self, tokenizer):
        self.tokenizer = tokenizer

    def generate_ids(self, prompt_ids, sampling):
        raise NotImplementedError

    def score_ids(self, prompt_ids, candidate_ids, length_normalize=False):
        raise NotImplementedError
