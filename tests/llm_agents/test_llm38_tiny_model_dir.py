"""README's ``llm=hf`` recipe without a download (walk38d M1): ``tiny_model_dir('mymodel',
['openspiel/kuhn_poker'])`` then ``llm=hf llm.model=mymodel`` warned that 91% of the prompt
tokens were its tokenizer's unknown token -- the folder's vocabulary held the game's texts
but none of llm=hf's prompt words (rules, state view, turn line, instruction)."""

import numpy as np
import pytest

import games
from llm_agents.prompts import REAL_MODEL_PROMPT, PromptBuilder
from llm_agents.tiny import TinyModelConfig, tiny_model_dir

KUHN = "openspiel/kuhn_poker"
SMALL = TinyModelConfig(n_layer=1, n_embd=16, n_head=2)


def _unknown_share(folder) -> float:
    """The unknown-token share of llm=hf's prompts (both action modes) on Kuhn states, read
    by the tokenizer the folder holds (as the trainer's warning measures it)."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    g, builder = games.make(KUHN), PromptBuilder(REAL_MODEL_PROMPT)
    ids: list[int] = []
    for seed in range(20):  # other seeds than the folder's corpus: states it never saw
        ts = g.reset(100 + seed)
        rng = np.random.default_rng(seed)
        while not ts.done:
            (agent,) = ts.acting
            for instruction in (REAL_MODEL_PROMPT.generate_instruction,
                                REAL_MODEL_PROMPT.score_instruction):
                prompt = builder.build(tok, game=KUHN, agent=agent, role=agent, role_prompt="",
                                       observation=g.text_observation(agent),
                                       legal=g.legal_action_texts(agent),
                                       instruction=instruction)
                ids += tok(prompt)["input_ids"]
            legal = np.flatnonzero(ts.legal[agent])
            ts = g.step({agent: int(rng.choice(legal))})
    return float(np.mean(np.asarray(ids) == tok.unk_token_id))


def test_readme_recipe_knows_the_hf_prompt_words(tmp_path):
    folder = tiny_model_dir(tmp_path / "mymodel", [KUHN], cfg=SMALL, episodes=20)
    assert _unknown_share(folder) == pytest.approx(0.0, abs=0.02)


def test_prompt_none_keeps_the_game_texts_only(tmp_path):
    """``prompt=None`` builds what the folder held before: the hf prompts are mostly unknown."""
    folder = tiny_model_dir(tmp_path / "bare", [KUHN], cfg=SMALL, episodes=20, prompt=None)
    assert _unknown_share(folder) > 0.5
