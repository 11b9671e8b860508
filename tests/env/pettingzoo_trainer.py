"""A trainer that knows nothing of this project but PettingZoo's documented AEC API
(``reset``, ``agent_iter``, ``last``, ``step``, ``action_space``): it learns how much each
action is worth on average to the agent that took it, then plays the best legal one. Crude,
but it is what a bot author's trainer looks like from the environment's side, and the policy
it writes is loaded by ``mandala-bot --bot policy:pettingzoo_trainer:PreferencePolicy,values=FILE``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np


def train(env: Any, games: int, seed: int) -> list[float]:
    """Average final reward of each action over ``games`` self-play games with random legal actions."""
    n = env.action_space(env.possible_agents[0]).n
    total, count = np.zeros(n), np.zeros(n)
    for g in range(games):
        env.reset(seed=seed + g)
        taken: dict[str, list[int]] = {agent: [] for agent in env.possible_agents}
        for agent in env.agent_iter():
            observation, reward, termination, truncation, _info = env.last()
            if termination or truncation:
                for action in taken[agent]:
                    total[action] += reward
                    count[action] += 1
                env.step(None)
                continue
            action = env.action_space(agent).sample(observation["action_mask"])
            taken[agent].append(int(action))
            env.step(action)
    return list(np.where(count > 0, total / np.maximum(count, 1), 0.0))


class PreferencePolicy:
    """Plays the legal action with the best learned value."""

    def __init__(self, values: str) -> None:
        self.values = np.array(json.loads(Path(values).read_text()))

    def act(self, observation: dict[str, Any]) -> int:
        return int(np.argmax(np.where(observation["action_mask"] == 1, self.values, -np.inf)))
