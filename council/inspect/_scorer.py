"""The ``council()`` scorer: each sample graded by the council, its verdict an inspect ``Score``.

A sample becomes a bank item (the input text is the prompt, the target the reference; its id is the sample's
``metadata.item_id``, else its id, as the inspect importer takes it) and a response row (the model as inspect
reports it, ``state.model``, whose vendor decides self-exclusion; the row id ``{item}::{model}#e{epoch}``, one
row per epoch). All samples of a process are rows of one run folder (:mod:`council.inspect._session`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inspect_ai.log._samples import sample_active
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Scorer, Target, accuracy, scorer, stderr
from inspect_ai.solver import TaskState
from pydantic import ValidationError

from council.core.errors import ConfigError, CouncilError, UnknownVendorError
from council.core.schema import BankItem, MemberSpec, ResponseRow
from council.core.vendors import vendor_of
from council.inspect._explain import describe, explanation
from council.inspect._hooks import register
from council.inspect._metrics import agreement_lift, deliberation_impact
from council.inspect._runs import RunChooser
from council.inspect._session import SampleConflict, session
from council.protocol.config import CouncilConfig, validation_problems
from council.protocol.configfile import load_config
from council.run.runner import check_budget

NAME = "grading_council/council"  # as ``--scorer`` names it: the entry point's name, then the scorer's


@scorer(metrics=[accuracy(), stderr(), agreement_lift(), deliberation_impact()], name=NAME)
def council(
    simulate: bool | str = False,
    provider_url: str | None = None,
    sim_config: str | None = None,
    config: str | None = None,
    deliberate: str | None = None,
    quorum: int | str | None = None,
    seed: int | str | None = None,
    judges: list[str] | str | None = None,
    reserves: list[str] | str | None = None,
    rubric: list[str] | str | None = None,
    runs_dir: str = "runs",
    run_id: str | None = None,
) -> Scorer:
    """Grade each sample's output against its target with a council of judges from different vendors.

    Every member grades blind in round one, then sees its peers' anonymised verdicts and reasons in round
    two; the consensus is a strict majority of round two (a tie is incorrect). No member of the vendor of the
    model under test (``state.model``) sits on its samples (inspect's ``mockllm`` is a model of no vendor and
    excludes no one). All samples of a process are rows of one council run folder, so its archive, resume,
    quotas and report (``council show``, ``council rescore``) cover the whole eval. Each argument may be given
    on the command line as ``-S name=value``.

    Args:
      simulate: Grade with the embedded provider (simulated judges on 127.0.0.1) instead of real vendors.
      provider_url: Base URL of an OpenAI-compatible endpoint that serves every judge (when not simulating).
      sim_config: JSON behaviour file of the embedded provider, as `council run --sim-config` takes it (latency,
        quotas, faults, batch completion time); implies simulate.
      config: Path of a council config file (TOML or JSON: roster, rubric parameters, quotas, prices...).
      deliberate: `"disputed"` (round two only where round one is disputed, the default) or `"all"`.
      quorum: Valid round-two votes a consensus needs (else the sample is flagged no_quorum and unscored).
      seed: Seed of the panel's letter order, the deliberation audit and the embedded provider.
      judges: The council's judge models, one per vendor (`-S judges=anthropic/claude-sonnet-4.5,openai/gpt-5`);
        default: the config's roster.
      reserves: Judge models that sit in only where self-exclusion emptied a seat; default: the roster's
        reserves of other vendors than the judges' (`-S 'reserves=[]'` for none).
      rubric: What a correct answer must do, for every sample without a `rubric` in its metadata; default: the
        council's generic rubric.
      runs_dir: Folder of the council's run folders.
      run_id: The run folder to grade into. Defaults to the run that already graded these samples (so
        `inspect score` on the same log again reuses its archived votes), else `inspect-<eval id>`.
    """
    runs_dir, run_id = str(runs_dir), None if run_id is None else str(run_id)  # ``-S run_id=7`` gives an int
    simulated = _flag(simulate, "simulate") or sim_config is not None
    if sim_config is not None:
        from council.sim import SimConfig

        SimConfig.from_file(sim_config)  # a bad file is refused here, not at the first sample
    if not simulated and provider_url is None:
        raise ConfigError("council(): pass simulate=true (the embedded provider) or provider_url=URL")
    overrides = {"deliberate": deliberate, "quorum": _number(quorum, "quorum"), "seed": _number(seed, "seed")}
    council_config = _config(config, **overrides)
    if judges is not None or reserves is not None:  # seats of the models named, on the config's other settings
        council_config = _config(config, **overrides, roster=_roster(judges, reserves, council_config))
    default_rubric = _text(rubric, "rubric")
    check_budget(council_config, [])  # a budget is only a bound if every judge has a price
    runs = RunChooser(Path(runs_dir), run_id)
    register()  # the hook that writes the run's results when the eval's task ends

    async def score(state: TaskState, target: Target) -> Score:
        model = str(state.model)
        item, row, problem = _sample(state, target, council_config.vendor_map, default_rubric)
        if problem is not None:
            return Score.unscored(reason=problem[0], explanation=problem[1], answer=state.output.completion,
                                  metadata={"actor": model})
        assert item is not None and row is not None
        active = sample_active()
        eval_id = active.eval_id if active is not None else None
        chosen = runs.choose(state.uuid, eval_id)
        try:
            run = await session(Path(runs_dir), chosen, council_config, simulate=simulated,
                                provider_url=provider_url, sim_config=Path(sim_config) if sim_config else None,
                                eval_id=eval_id)
            graded = await run.grade(item, row, state.uuid, eval_id)
        except SampleConflict as exc:
            return Score.unscored(reason="scoring_failed", explanation=str(exc), answer=row.response,
                                  metadata={"actor": model, "run_id": chosen, "row_id": row.row_id})
        metadata = describe(graded, run.config, actor=model)
        text = explanation(graded, run.config)
        verdict = graded.verdict
        if verdict.consensus is None:
            return Score.unscored(reason="grader_failed", answer=row.response, explanation=text, metadata=metadata)
        return Score(value=CORRECT if verdict.consensus == "correct" else INCORRECT, answer=row.response,
                     explanation=text, metadata=metadata)

    return score


def _sample(state: TaskState, target: Target, vendor_map: dict[str, str], rubric: str | None
            ) -> tuple[BankItem | None, ResponseRow | None, tuple[str, str] | None]:
    """The sample as a bank item and a response row, or why it cannot be graded (a reason of inspect's and a
    sentence): no target, no output, a model whose vendor cannot be decided (as ``council grade`` refuses it)."""
    model = str(state.model)
    if not any(t.strip() for t in target):
        return None, None, ("scoring_failed", "the sample has no target: the council grades against a reference")
    response = state.output.completion
    if not response.strip():
        return None, None, ("no_response", "the model gave no output to grade")
    metadata = state.metadata or {}
    named = metadata.get("item_id")
    item_id = named.strip() if isinstance(named, str) and named.strip() else str(state.sample_id)
    probe, own_rubric = metadata.get("probe"), metadata.get("rubric")
    item = BankItem(id=item_id, probe=probe if isinstance(probe, str) and probe.strip() else "inspect",
                    prompt=state.input_text, reference=reference(target),
                    rationale="an inspect sample, graded against its target",
                    rubric=own_rubric if isinstance(own_rubric, str) and own_rubric.strip() else rubric)
    try:
        row = ResponseRow.model_validate(
            {"row_id": f"{item_id}::{model}#e{state.epoch}", "item_id": item_id, "model": model,
             "response": response}, context={"vendor_map": vendor_map})
    except ValidationError as exc:
        return None, None, ("scoring_failed", validation_problems(exc))
    return item, row, None


def reference(target: Target) -> str:
    """The reference the judges grade against: the target, or, for a target of several answers (each one correct,
    as inspect's ``match()`` and ``includes()`` read them), those answers listed; never glued together as
    ``Target.text`` glues them."""
    answers = [t.strip() for t in target if t.strip()]
    if len(answers) == 1:
        return answers[0]
    return "Any one of these answers is correct:\n" + "\n".join(f"- {a}" for a in answers)


def _config(path: str | None, **overrides: Any) -> Any:
    try:
        return load_config(Path(path) if path else None, **{k: v for k, v in overrides.items() if v is not None})
    except CouncilError:
        raise
    except ValidationError as exc:
        raise ConfigError(f"council(): {validation_problems(exc)}") from None


def _roster(judges: list[str] | str | None, reserves: list[str] | str | None, config: CouncilConfig
            ) -> list[dict[str, Any]]:
    """The roster the arguments name: a seat per judge model (its vendor decided as a row's is), then the
    reserves (None: those of the config's roster whose vendor no judge has)."""
    seats = [m for m in config.roster if not m.reserve] if judges is None else _members(judges, config, "judges")
    if reserves is None:
        taken = {m.vendor for m in seats}
        spare = [m for m in config.roster if m.reserve and m.vendor not in taken]
    else:
        spare = [m.model_copy(update={"reserve": True}) for m in _members(reserves, config, "reserves")]
    return [m.model_dump() for m in (*seats, *spare)]


def _members(models: list[str] | str, config: CouncilConfig, name: str) -> list[MemberSpec]:
    out = []
    for model in _names(models):
        try:
            out.append(MemberSpec(vendor=vendor_of(model, config.vendor_map), judge_model=model))
        except UnknownVendorError as exc:
            raise ConfigError(f"council(): {name}: {exc} (or vendor_map in a council config)") from None
    return out


def _names(value: list[str] | str) -> list[str]:
    """Model ids as a list gives them, or as ``-S name=a,b`` (a list) or ``-S name=a`` (a string) does."""
    items = value if isinstance(value, list | tuple) else str(value).split(",")
    return [str(v).strip() for v in items if str(v).strip()]


def _text(value: list[str] | str | None, name: str) -> str | None:
    """A text argument; ``-S rubric=a, b`` arrives cut at its commas, which are put back. inspect reads an ``-S``
    value as YAML, so a text with ``: `` in it arrives as a mapping: refused, with how to quote it."""
    if value is None:
        return None
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        value = ",".join(value)
    if not isinstance(value, str):
        raise ConfigError(f"council(): {name} must be a text, not {type(value).__name__} {value!r}; on the command "
                          f"line, quote it as YAML: -S '{name}=\"...\"'")
    return value.strip() or None


def _flag(value: bool | str, name: str) -> bool:
    """A boolean argument, also as ``-S name=true`` gives it (a string)."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off", ""):
        return False
    raise ConfigError(f"council(): {name}={value!r}: expected true or false")


def _number(value: int | str | None, name: str) -> int | None:
    """An integer argument, also as ``-S name=3`` gives it."""
    if value is None or isinstance(value, int) and not isinstance(value, bool):
        return value
    try:
        return int(str(value).strip())
    except ValueError:
        raise ConfigError(f"council(): {name}={value!r}: expected a whole number") from None
