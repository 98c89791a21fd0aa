"""run/timing.py: the official statistics, the official stopping rule, timing one call, the cache flushes."""
import math
import time

import pytest
import torch

from harness.run import timing
from harness.run.stats import Stats, calculate_stats, should_stop


def test_stats_match_hand_computed_values():
    stats = calculate_stats([10, 20, 30, 40])
    # mean 25; squared deviations 225 + 25 + 25 + 225 = 500; sample variance 500 / 3
    assert stats.runs == 4
    assert stats.mean == 25
    assert stats.std == pytest.approx(math.sqrt(500 / 3))
    assert stats.err == pytest.approx(math.sqrt(500 / 3) / 2)
    assert (stats.best, stats.worst) == (10.0, 40.0)
    assert isinstance(stats.best, float) and isinstance(stats.worst, float)


def test_stats_of_identical_durations_have_no_spread():
    stats = calculate_stats([7, 7, 7])
    assert (stats.mean, stats.std, stats.err) == (7, 0.0, 0.0)


def test_stats_of_one_run_and_of_none():
    assert calculate_stats([5]).std == 0.0
    with pytest.raises(ValueError):
        calculate_stats([])


def stats_with(mean, err, runs):
    return Stats(runs=runs, mean=mean, std=err * math.sqrt(runs), err=err, best=mean, worst=mean)


def test_never_stops_before_three_calls():
    precise = stats_with(mean=1000.0, err=0.0, runs=2)
    assert not should_stop(precise, wall_ns=1e12, max_time_ns=1.0)


def test_stops_once_the_relative_error_is_below_a_tenth_of_a_percent():
    assert should_stop(stats_with(1000.0, 0.99, 3), wall_ns=0, max_time_ns=50e9)
    assert not should_stop(stats_with(1000.0, 1.0, 3), wall_ns=0, max_time_ns=50e9)  # exactly 0.1%: go on


def test_stops_when_the_summed_kernel_time_exceeds_the_budget():
    noisy = 100.0
    assert not should_stop(stats_with(1e6, noisy * 1e3, 100), wall_ns=0, max_time_ns=100e6)  # 100 ms = budget
    assert should_stop(stats_with(1e6, noisy * 1e3, 101), wall_ns=0, max_time_ns=100e6)


def test_stops_after_two_minutes_of_wall_time():
    noisy = stats_with(1000.0, 100.0, 10)
    assert not should_stop(noisy, wall_ns=120e9, max_time_ns=50e9)
    assert should_stop(noisy, wall_ns=120e9 + 1, max_time_ns=50e9)


def test_a_zero_time_call_stops_instead_of_dividing_by_zero():
    assert should_stop(stats_with(0.0, 0.0, 3), wall_ns=0, max_time_ns=50e9)


def test_time_call_on_the_cpu_measures_wall_time_and_returns_the_result():
    result, duration = timing.time_call(lambda: time.sleep(0.02) or "done", "cpu", "none")
    assert result == "done"
    assert 15e6 < duration < 2e9


def test_unknown_flush_mode_is_refused():
    timing.flush_last_level_cache("none")  # the CPU's mode does nothing
    with pytest.raises(ValueError, match="unknown flush mode"):
        timing.flush_last_level_cache("bogus")


gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")


@pytest.mark.gpu
@gpu
def test_fast_flush_writes_several_times_the_last_level_cache():
    device = torch.cuda.current_device()
    llc = timing.last_level_cache_bytes(device)
    assert llc >= 32 << 20
    timing.flush_last_level_cache("fast")
    assert timing._fast_flush_buffer(device).numel() == timing.FAST_FLUSH_CACHE_MULTIPLE * llc


@pytest.mark.gpu
@gpu
def test_fast_flush_keeps_the_gpu_busy_for_the_chosen_time():
    timing.flush_last_level_cache("fast")
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    timing.flush_last_level_cache("fast")
    end.record()
    torch.cuda.synchronize()
    assert start.elapsed_time(end) == pytest.approx(timing.FAST_FLUSH_SLEEP_MS, rel=0.35)


@pytest.mark.gpu
@gpu
def test_fast_flush_hides_host_work_shorter_than_the_sleep():
    x = torch.ones(1024, device="cuda")

    def host_heavy():
        time.sleep(0.001)  # 1 ms of host-side work before the launch
        return x * 2

    timing.time_call(host_heavy, "cuda", "fast")
    _, duration = timing.time_call(host_heavy, "cuda", "fast")
    assert duration < 0.5e6  # the event timed GPU work only, not the 1 ms on the host
