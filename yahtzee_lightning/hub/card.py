"""The model card: Hub metadata (model-index with the mean score) and our evaluation table."""

from __future__ import annotations

import json

from huggingface_hub import EvalResult, ModelCard, ModelCardData

from ..evaluation.report import format_markdown


def model_card(agent) -> ModelCard:
    training = agent.training or {}
    name = training.get("name", "yahtzee-agent")
    evaluation = agent.evaluation
    eval_results = None
    if evaluation is not None:
        s = evaluation["summary"]
        dataset = f"Yahtzee solitaire ({evaluation['rules']['joker']} joker)"
        eval_results = [
            EvalResult(
                task_type="reinforcement-learning",
                task_name="reinforcement-learning",
                dataset_type="yahtzee",
                dataset_name=dataset,
                metric_type="mean_reward",
                metric_name="mean score",
                metric_value=f"{s['score']['mean']:.2f} +/- {s['score']['sd']:.2f}",
            )
        ]
    data = ModelCardData(
        library_name="yahtzee_lightning",
        tags=["reinforcement-learning", "yahtzee", "torchrl", "lightning", training.get("algorithm", "rl").lower()],
        model_name=name,
        eval_results=eval_results,
    )
    lines = [
        f"# {name}",
        "",
        f"A Yahtzee agent trained with yahtzee_lightning ({training.get('algorithm', 'unknown algorithm')}).",
        "",
        "```python",
        "from yahtzee_lightning.hub import YahtzeeAgent",
        f'agent = YahtzeeAgent.from_pretrained("{training.get("repo_id", "<repo id or folder>")}")',
        "```",
        "",
        "or `yahtzee-lightning evaluate --agent <repo id or folder> --games 10000`.",
        "",
        "## Training",
        "",
        "```json",
        json.dumps(training, indent=2),
        "```",
        "",
        "## Network",
        "",
        "```json",
        json.dumps(agent.net.config, indent=2),
        "```",
    ]
    if evaluation is not None:
        table = format_markdown(evaluation).split("\n", 2)[2]  # drop the report's own title
        lines += ["", "## Evaluation against the exact optimum", "", table]
    return ModelCard.from_template(data, template_str="---\n{{ card_data }}\n---\n\n" + "\n".join(lines) + "\n")
