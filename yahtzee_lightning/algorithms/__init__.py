"""On-policy algorithms as LightningModules, and tabular SARSA for reduced games."""

from .a2c import A2C
from .anchored_ppo import AnchoredPPO
from .base import OnPolicyAlgorithm
from .distill import Distill
from .expert_iteration import ExpertIteration
from .ppo import PPO
from .reinforce import Reinforce

__all__ = ["A2C", "AnchoredPPO", "PPO", "Distill", "ExpertIteration", "OnPolicyAlgorithm", "Reinforce"]
