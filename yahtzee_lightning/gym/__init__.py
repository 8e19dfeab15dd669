"""The ecosystem's own interfaces: Gymnasium, Stable-Baselines3 and PettingZoo.

Importing this package only registers the Gymnasium ids (with string entry points, so that no
torch module loads until an env is made); the envs live in its modules:

* ``.spaces``: the one observation and action layout (``Discrete(45)``, a 39-entry vector and
  the 45-entry action mask) and the batched encoder of engine states;
* ``.single``: ``YahtzeeGymEnv``, one game as a ``gymnasium.Env`` on the fast single-game engine;
* ``.vector``: ``YahtzeeVectorEnv``, N games as one ``gymnasium.vector.VectorEnv`` on the batched
  engine (what ``gymnasium.make_vec`` makes of the ids); ``.sb3``: ``YahtzeeSB3VecEnv``, the same
  as a Stable-Baselines3 ``VecEnv``; ``.policy``: ``GymPolicyPlayer``, any policy over these
  observations (an SB3 model zip too) as a player, for ``evaluate``;
* ``.pettingzoo``: ``YahtzeeAECEnv``, a match of 2-4 players as a PettingZoo AEC env.

Needs the gym extra (Gymnasium, PettingZoo, Stable-Baselines3): pip install 'yahtzee-lightning[gym]'.
Registered ids: ``yahtzee_lightning/Yahtzee-v0`` (the full game from an empty card) and
``yahtzee_lightning/YahtzeeSingleTurn-v0`` (one turn from a random, partly filled card); both take
the rule variants as keywords (``joker``, ``yahtzee_bonus``, ``boxes`` or ``rules``).
"""

from __future__ import annotations

from gymnasium.envs.registration import register, registry

ENTRY_POINT = "yahtzee_lightning.gym.single:YahtzeeGymEnv"
VECTOR_ENTRY_POINT = "yahtzee_lightning.gym.vector:YahtzeeVectorEnv"  # gymnasium.make_vec: N games, one batch
ENV_IDS: dict[str, dict[str, str]] = {
    "yahtzee_lightning/Yahtzee-v0": {"task": "full_game", "start_card": "empty"},
    "yahtzee_lightning/YahtzeeSingleTurn-v0": {"task": "single_turn", "start_card": "random"},
}


def register_envs() -> None:
    """Register the Gymnasium ids (idempotent: a second call, or a reload, changes nothing)."""
    for env_id, kwargs in ENV_IDS.items():
        if env_id not in registry:
            register(id=env_id, entry_point=ENTRY_POINT, vector_entry_point=VECTOR_ENTRY_POINT, kwargs=dict(kwargs))


register_envs()
