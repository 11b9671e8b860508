"""The Gymnasium vector environment (``MandalaVectorEnv``, what ``gymnasium.make_vec`` makes of
``mandala/Mandala-v0``): its spaces and Gymnasium's same-step autoreset, and every step equal
to the ``ArrayBatch`` it wraps (itself held equal to the engine, ``test_env_arrays.py``):
observations, masks, each learner's reward, the ended game's last observation and ``info``."""

from __future__ import annotations

import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode

from mandala_client.env import GYM_ID, ArrayBatch, IllegalAction, MandalaGymEnv, MandalaVectorEnv


def _lowest(obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
    return np.argmax(masks, axis=1)


@pytest.mark.parametrize("opponent", ["random", _lowest])
def test_the_vector_env_steps_as_its_array_batch_with_gymnasiums_same_step_autoreset(opponent: object) -> None:
    envs = gymnasium.make_vec(GYM_ID, num_envs=12, opponent=opponent, reward="score")
    assert isinstance(envs, MandalaVectorEnv)
    assert envs.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    obs, infos = envs.reset(seed=5)
    batch = ArrayBatch(12, seed=int(seeding.np_random(5)[0].integers(2**63)), opponent=opponent,  # type: ignore[arg-type]
                       reward="score", final_observations=True)
    ref_obs, ref_mask = batch.observations()
    rng = np.random.default_rng(0)
    ended_games = 0
    for _ in range(150):
        assert envs.observation_space.contains(obs)
        assert obs["observation"].tobytes() == ref_obs.tobytes() and obs["action_mask"].tobytes() == ref_mask.tobytes()
        assert infos["seat"].tolist() == batch.learner and infos["_seat"].all()
        assert np.array_equal(envs.action_masks(), ref_mask.astype(bool))
        actions = np.argmax((rng.random(ref_mask.shape) + 1) * ref_mask, axis=1)
        assert envs.action_space.contains(actions)
        obs, rewards, terminations, truncations, infos = envs.step(actions)
        ref_obs, ref_mask, ended = batch.step(actions)
        assert rewards.dtype == np.float64 and terminations.dtype == truncations.dtype == np.bool_
        assert not truncations.any()
        assert terminations.tolist() == [row in {r for r, _, _ in ended} for row in range(12)]
        expected = np.zeros(12)
        for k, (row, by_seat, info) in enumerate(ended):
            seat = info["seat"]
            expected[row] = by_seat[seat]
            final = infos["final_obs"][row]
            assert final["observation"].tobytes() == batch.final_observations[k, seat].tobytes()
            assert not final["action_mask"].any()  # the game is over: nothing to decide
            assert infos["final_info"]["end_reason"][row] == info["end_reason"]
            assert infos["final_info"]["scores"][row] == info["scores"]
            assert infos["final_info"]["seat"][row] == seat
        assert np.array_equal(rewards, expected)
        if ended:
            assert infos["_final_obs"].tolist() == terminations.tolist()
        else:
            assert "final_obs" not in infos
        ended_games += len(ended)
    assert ended_games > 20


def test_the_vector_env_repeats_for_a_seed_and_refuses_what_it_cannot_do() -> None:
    def run(seed: int) -> bytes:
        envs = MandalaVectorEnv(8)
        obs, _infos = envs.reset(seed=seed)
        rng = np.random.default_rng(1)
        for _ in range(40):
            obs, *_rest = envs.step(np.argmax((rng.random((8, 151)) + 1) * obs["action_mask"], axis=1))
        return obs["observation"].tobytes()

    assert run(3) == run(3) != run(4)
    envs = MandalaVectorEnv(4)
    with pytest.raises(AssertionError, match=r"reset\(\) needs to be called before step"):
        envs.step([0, 0, 0, 0])
    obs, _infos = envs.reset(seed=1)
    bad = np.argmax(obs["action_mask"], axis=1)
    bad[3] = int(np.flatnonzero(obs["action_mask"][3] == 0)[0])
    with pytest.raises(IllegalAction, match=r"row 3 \(player_[01]\) cannot play action"):
        envs.step(bad)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        envs.reset(seed=1, options={"seat": 0})
    assert "ignores the option(s) 'seat'" in str(caught[0].message)
    with pytest.raises(ValueError, match=r"the opponent 'greedy' is a bot.*vectorization_mode='sync'"):
        gymnasium.make_vec(GYM_ID, num_envs=2, opponent="greedy")
    with pytest.raises(ValueError, match=r"takes seat=None only, not 0"):
        MandalaVectorEnv(2, seat=0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="num_envs is a positive number of games"):
        MandalaVectorEnv(0)


def test_bot_opponents_still_vectorise_through_gymnasiums_sync_vector_env() -> None:
    envs = gymnasium.make_vec(GYM_ID, num_envs=2, vectorization_mode="sync", opponent="greedy")
    assert isinstance(envs.unwrapped, gymnasium.vector.SyncVectorEnv)
    assert all(isinstance(e.unwrapped, MandalaGymEnv) for e in envs.unwrapped.envs)
    obs, _infos = envs.reset(seed=2)
    obs, *_rest = envs.step(np.argmax(obs["action_mask"], axis=1))
    assert obs["observation"].shape == (2, 167)


def test_gymnasiums_episode_statistics_wrapper_counts_every_game_of_the_vector_env() -> None:
    """``RecordEpisodeStatistics`` (Gymnasium's vector wrapper, as trainers use it) sees each
    game end once, with the learner's reward as its return and its learner steps as length."""
    envs = gymnasium.wrappers.vector.RecordEpisodeStatistics(gymnasium.make_vec(GYM_ID, num_envs=8), buffer_length=1000)
    obs, _infos = envs.reset(seed=1)
    rng = np.random.default_rng(0)
    steps = np.zeros(8, np.int64)
    returns: list[float] = []
    lengths: list[int] = []
    for _ in range(200):
        obs, rewards, terminations, _truncations, _infos = envs.step(
            np.argmax((rng.random((8, 151)) + 1) * obs["action_mask"], axis=1))
        steps += 1
        returns += rewards[terminations].tolist()
        lengths += steps[terminations].tolist()
        steps[terminations] = 0
    assert len(returns) > 20 and set(returns) <= {-1.0, 0.0, 1.0}
    assert list(envs.return_queue) == returns and list(envs.length_queue) == lengths
