"""One set of rules for an LLM team's settings and the snapshots it saves (walk 24).

Training used to accept settings its own snapshot loader refused: a prompt slot with a format
spec or conversion (``{role:<8}``, ``{role!s}``) or ``max_new_tokens`` over 65536 trained a
generation, then a league stopped reloading its first snapshot, and a single run's snapshots
could not be evaluated. The loader now builds the same settings classes a run builds
(:func:`llm_agents.policy.settings_of`), so a snapshot loads exactly when its settings are
ones a run accepts; the command line's check refuses the rest before training, in one line
naming the value as written.
"""

import dataclasses
import string

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import games
from llm_agents.policy import MAX_NEW_TOKENS, LLMPolicy, check_payload
from llm_agents.prompts import FIELDS, PromptConfig
from llm_agents.settings import ActionConfig, SamplingConfig
from llm_agents.team import Team
from marl.core import PolicyLoadError, load_policy
from populations.command_line import CLIError
from populations.train_overrides import check_command_line

from .conftest import COMPACT, KUHN

SLOTS = "a slot is a plain {name} (no format spec, conversion, index or attribute) with " \
        "name one of " + ", ".join(FIELDS)


@pytest.mark.parametrize("line, message", [
    (["experiment=kuhn_llm_selfplay", 'llm.grpo.prompt.system="{role:<8}"'],
     f"llm.grpo.prompt.system has a bad slot {{role:<8}}; {SLOTS}"),
    (["experiment=tool_team_llm", 'llm.grpo.prompt.user="{role!s} {observation}"'],
     f"llm.grpo.prompt.user has a bad slot {{role!s}}; {SLOTS}"),
    (["experiment=kuhn_llm_selfplay", 'llm.grpo.prompt.user="{legal[0]}"'],
     f"llm.grpo.prompt.user has a bad slot {{legal[0]}}; {SLOTS}"),
    (["experiment=kuhn_llm_selfplay", "llm.grpo.action.mode=generate",
      "llm.grpo.action.sampling.max_new_tokens=70000"],
     "llm.grpo.action.sampling.max_new_tokens=70000; expected an integer in [1, 65536] "
     "(tokens per generation; snapshots refuse more)"),
    (["experiment=kuhn_llm_selfplay", "llm.grpo.action.sampling.temperature=0"],
     "llm.grpo.action.sampling.temperature=0.0; expected a finite number > 0 (for argmax "
     "decoding set greedy=True, on the command line llm.grpo.action.sampling.greedy=true; a "
     "greedy group's GRPO episodes play alike, leaving little variety to learn from)"),
])
def test_the_start_check_refuses_settings_whose_snapshots_would_not_load(line, message):
    """Before: the first two and max_new_tokens=70000 were accepted, trained a generation and
    then failed to load ``snapshots/llm/v0000.pt``; the temperature's hint named no CLI key."""
    with pytest.raises(CLIError) as err:
        check_command_line(line)
    assert str(err.value) == f"bad config: {message}"


@pytest.fixture(scope="module")
def policy(kuhn_tok):
    from llm_agents.tiny import TinyModelConfig, build_model

    team = Team.shared(build_model(kuhn_tok, TinyModelConfig()), kuhn_tok)
    return LLMPolicy.from_team(team, games.make(KUHN).spec, prompt=COMPACT)


@pytest.fixture(scope="module")
def payload(policy, tmp_path_factory):
    path = policy.save(tmp_path_factory.mktemp("walk24") / "good.pt")
    return torch.load(path, weights_only=True)["payload"]


TEMPLATES = ["{role}", "{role:<8}", "{role!s}", "{role!r:>3}", "{role:}", "{role:{agent}}",
             "{observation:>999999999}", "{observation.__class__}", "{legal[0]}", "{0}", "{}",
             "{history}", "{{role}}", "{{{role}}}", "a } b", "{role", "", "é {agent} ✓",
             "{rules}\n{state}\n{turn}", "{ role}"]
SAMPLING = [{"max_new_tokens": 1}, {"max_new_tokens": MAX_NEW_TOKENS},
            {"max_new_tokens": MAX_NEW_TOKENS + 1}, {"max_new_tokens": 70000},
            {"max_new_tokens": 0}, {"temperature": 1e-6}, {"temperature": 1e6},
            {"temperature": 0.0}, {"top_p": 1e-9}, {"greedy": True, "stop": ()},
            {"stop": ("",)}, {"stop_at_eos": False}]
ACTION = [{"policy_samples": 0}, {"policy_samples": 4096}, {"policy_samples": 4097},
          {"mode": "score"}, {"mode": "nope"}, {"score_temperature": 1e-9},
          {"fallback": "first", "on_invalid": "end"}]


def _made(build):
    try:
        return build()
    except ValueError:
        return None


def _loads(payload, part, changes) -> bool:
    """Whether ``check_payload`` (all of ``load_policy``'s checks before building) accepts
    ``payload`` with ``changes`` made to its ``part`` (prompt, action, action.sampling)."""
    changed = {**payload, "action": {**payload["action"],
                                     "sampling": dict(payload["action"]["sampling"])},
               "prompt": dict(payload["prompt"])}
    target = changed["action"]["sampling"] if part == "sampling" else changed[part]
    target.update({k: list(v) if isinstance(v, tuple) else v for k, v in changes.items()})
    try:
        check_payload(changed)
    except PolicyLoadError as err:
        assert "\n" not in str(err)
        return False
    return True


CASES = ([("prompt", {key: t}) for t in TEMPLATES for key in ("system", "user")]
         + [("sampling", s) for s in SAMPLING] + [("action", a) for a in ACTION])


@pytest.mark.parametrize("part, changes", CASES, ids=[f"{p}-{c}" for p, c in CASES])
def test_a_snapshot_loads_exactly_when_its_settings_are_accepted(policy, payload, tmp_path,
                                                                  part, changes):
    """Both ways: settings a run accepts make a snapshot that ``load_policy`` loads with the
    same settings, and a snapshot whose settings a run refuses is refused (one line)."""
    build = {"prompt": lambda: dataclasses.replace(COMPACT, **changes),
             "sampling": lambda: ActionConfig(mode="generate",
                                              sampling=SamplingConfig(**changes)),
             "action": lambda: ActionConfig(**changes)}[part]
    made = _made(build)
    assert _loads(payload, part, changes) == (made is not None), (part, changes)
    if made is not None:  # a real snapshot of those settings, through the whole loader
        prompt, action = (made, policy.action) if part == "prompt" else (COMPACT, made)
        saved = LLMPolicy(policy.team, policy.meta, action, prompt).save(tmp_path / "p.pt")
        loaded = load_policy(saved)
        assert (loaded.prompt, loaded.action) == (prompt, action)


_SLOT = st.builds(
    lambda name, conversion, spec: "{" + name + conversion + spec + "}",
    st.one_of(st.sampled_from(FIELDS), st.sampled_from(["", "0", "x", "role.x", "legal[0]"])),
    st.sampled_from(["", "!s", "!r", "!a"]), st.sampled_from(["", ":", ":<8", ":>99", ":{role}"]))
_TEMPLATE = st.lists(st.one_of(_SLOT, st.text(alphabet=" ab{}\n:!é", max_size=6)),
                     max_size=5).map("".join)


@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(system=_TEMPLATE, user=_TEMPLATE)
def test_any_template_the_settings_accept_loads_and_formats(payload, system, user):
    """Property: for generated templates, the prompt settings accept them exactly when a
    snapshot holding them passes the loader's checks; accepted ones format with plain text
    values (no spec, conversion, index or attribute runs)."""
    made = _made(lambda: PromptConfig(system=system, user=user))
    assert _loads(payload, "prompt", {"system": system, "user": user}) == (made is not None)
    if made is not None:  # every slot is replaced by its value as it is
        fields = {name: f"<{name}>" for name in FIELDS}
        for template in (system, user):
            plain = "".join(text + (fields[name] if name is not None else "")
                            for text, name, _, _ in string.Formatter().parse(template))
            assert template.format(**fields) == plain
