"""On-policy algorithms as LightningModules, and tabular SARSA for reduced games.

The algorithms a user reads and copies, and the one base they extend (``base.py``, with the loss
pieces of ``policy_gradient.py``); the training loop they run in is ``yahtzee_lightning.loop``.
"""

from .._lazy import moved_modules
from .a2c import A2C
from .anchored_ppo import AnchoredPPO
from .base import OnPolicyAlgorithm
from .distill import Distill
from .expert_iteration import ExpertIteration
from .ppo import PPO
from .reinforce import Reinforce

#: The algorithms by the name a checkpoint records: what an agent exported from one carries
#: (``yahtzee_lightning.loop.export.agent_from_checkpoint``).
ALGORITHMS: dict[str, type[OnPolicyAlgorithm]] = {
    cls.__name__: cls for cls in (A2C, AnchoredPPO, Distill, ExpertIteration, PPO, Reinforce)
}

#: Where the loop's modules lived before they moved to ``yahtzee_lightning.loop``: the old paths
#: (``yahtzee_lightning.algorithms.checkpoint.RunCheckpoint`` in a recipe's callbacks, a pickle)
#: import the moved module.
MOVED_TO_LOOP = (
    "checkpoint", "collection", "config_errors", "diagnosis", "ensemble", "evaluation", "export", "host", "launch",
    "lightning_cli", "op_count", "packed", "progress_lines", "resume", "settings", "trainer", "training_config",
)  # fmt: skip
moved_modules(__name__, {old: f"yahtzee_lightning.loop.{old}" for old in MOVED_TO_LOOP})

__all__ = ["ALGORITHMS", "A2C", "AnchoredPPO", "PPO", "Distill", "ExpertIteration", "OnPolicyAlgorithm", "Reinforce"]
