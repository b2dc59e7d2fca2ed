"""Errors cross process boundaries (Ray workers, learner actors, rollout workers): every
exception class a user can meet pickles back to the same type and message. A class whose
``__init__`` takes more than the message came back from a Ray worker as Ray's
UnserializableException, a traceback instead of the one-line error."""

import importlib
import inspect
import pickle

import pytest

import games
from games.core import GameCodeError, GameContractError

MODULES = ["games.core", "games.errors", "games.check", "games.tool.tools", "marl.core",
           "marl.guards", "marl.registry", "marl.train", "populations.db", "populations.runners",
           "populations.run_folder", "populations.store", "populations.learner_actors"]


def _classes():
    for name in MODULES:
        mod = importlib.import_module(name)
        for _, cls in inspect.getmembers(mod, inspect.isclass):
            if issubclass(cls, Exception) and cls.__module__ == name:
                yield cls


def _raised(exc):
    try:
        raise exc
    except Exception as err:  # noqa: BLE001
        return err


def test_a_game_code_error_pickles_with_its_message_and_attributes():
    try:
        try:
            raise RuntimeError("physics exploded")
        except RuntimeError as inner:
            raise GameCodeError("push", "step 3", inner) from inner
    except GameCodeError as raised:
        err = raised
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is GameCodeError and str(back) == str(err)
    assert (back.game, back.where, back.method) == ("push", "step 3", err.method)
    assert isinstance(back, games.GameError) and isinstance(back, ValueError)


@pytest.mark.parametrize("cls", sorted(set(_classes()), key=lambda c: c.__qualname__),
                         ids=lambda c: c.__qualname__)
def test_every_error_class_pickles_to_its_type_and_message(cls):
    if cls is GameCodeError:
        err = _raised(GameCodeError("g", "step 1", _raised(ValueError("bad"))))
    elif cls is GameContractError:
        err = GameContractError("g", "step 1", "obs of a has shape (8,), expected (4,)")
    else:
        try:
            err = cls("one line")
        except TypeError:
            pytest.skip(f"{cls.__qualname__} is not built from a message")
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is cls and str(back) == str(err)
