"""The adaptive rules people deploy, each on a short trace computed by hand from its source's
formulas (the arithmetic is in the comments), with the pathology its users report."""

from __future__ import annotations

import math
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from targets.algorithms import Policy, PolicyError, build_params
from targets.algorithms.adaptive import Params, current_limit, decide, observe, observe_reading, release
from targets.algorithms.adaptive_rules import RULES, WINDOWABLE, Reading
from targets.algorithms.adaptive_rules.envoy import EPOCH, MIN_RTT, NEXT_MIN_RTT, SAMPLES
from targets.algorithms.adaptive_rules.gozero import max_flight

approx = pytest.approx


def saturated(s: tuple, now: float, rtt: float, p: Params) -> tuple:
    """One sample from a caller that keeps the limit full (in flight = the limit's integer part)."""
    return observe((s[0], float(math.floor(s[0])), s[2]), now, rtt, p)


def test_gradient2_climbs_to_its_max_at_a_constant_timeout_latency():
    # Every sample 5 s (a downstream stuck at its timeout): long RTT = 5 s = the sample, so
    # gradient = min(1, 1.5 * 5 / 5) = 1 and limit' = 0.8 * L + 0.2 * (L + 4) = L + 0.8 a sample.
    p = Params(max_limit=30, initial_limit=10)
    s = (10.0, 10.0, (0.0, 0, 0.0))
    trace = []
    for _ in range(30):
        s = saturated(s, 0.0, 5.0, p)
        trace.append(s[0])
    assert trace[:3] == [approx(10.8), approx(11.6), approx(12.4)]
    assert trace[9] == approx(18.0)               # 10 + 10 * 0.8
    assert trace[24] == approx(30.0) and trace[-1] == 30.0  # 10 + 25 * 0.8 = 30: pinned at max


def test_gradient2_creeps_up_under_mild_overload():
    # Latency up 2% a sample (a queue building at 1.1x capacity): while the sample stays under
    # 1.5 x the long RTT the gradient is 1, so the limit still gains 0.8 a sample.
    p = Params(max_limit=100, initial_limit=10)
    s = (10.0, 10.0, (0.0, 0, 0.0))
    rtts = [0.1 * 1.02**k for k in range(10)]
    for rtt in rtts:
        s = saturated(s, 0.0, rtt, p)
    assert rtts[-1] / rtts[0] == approx(1.195, abs=1e-3)  # latency +20% ...
    assert s[0] == approx(18.0)                            # ... and the limit +80%


def test_aimd_halves_at_its_cap_then_climbs_back_one_by_one():
    # backoff 0.5 at the cap 21: a slow sample -> floor(21 * 0.5) = 10 (the source's integer
    # limit), then +1 per fast sample (in flight 21 >= limit / 2) back to 21 after 11 samples;
    # the next slow one halves again.
    p = Params(max_limit=21, initial_limit=21, rule="aimd", backoff_ratio=0.5, timeout_s=0.2)
    s = (21.0, 21.0, ())
    trace = []
    for rtt in [0.3] + [0.1] * 11 + [0.3]:
        s = observe((s[0], 21.0, s[2]), 0.0, rtt, p)
        trace.append(s[0])
    assert trace == [10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 10]


def test_vegas_hand_computed_sequence():
    # alpha 3, beta 6, threshold 1 (log10root(L) = 1 for L < 100); smoothing 1; jitter 1.0 and
    # multiplier 30: no probe before 600 samples.
    p = Params(max_limit=100, initial_limit=20, rule="vegas")
    s = (20.0, 20.0, (0.0, 0, 0, 1.0))
    s = saturated(s, 0.0, 0.010, p)   # first sample: rtt_noload = 10 ms, limit unchanged
    assert s[0] == 20 and s[2][0] == 0.010
    s = saturated(s, 0.0, 0.010, p)   # queue = ceil(20 * (1 - 10/10)) = 0 <= 1: + beta 6 -> 26
    assert s[0] == 26
    s = saturated(s, 0.0, 0.012, p)   # ceil(26 * (1 - 10/12)) = ceil(4.33) = 5: 3 <= 5 <= 6, stays
    assert s[0] == 26
    s = saturated(s, 0.0, 0.020, p)   # ceil(26 * 0.5) = 13 > 6: - 1 -> 25
    assert s[0] == 25
    s = saturated(s, 0.0, 0.0105, p)  # ceil(25 * (1 - 10/10.5)) = ceil(1.19) = 2 < 3: + 1 -> 26
    assert s[0] == 26
    s = saturated(s, 0.0, 0.0102, p)  # ceil(26 * (1 - 10/10.2)) = ceil(0.51) = 1 <= 1: + 6 -> 32
    assert s[0] == 32
    s = observe((26.0, 12.0, s[2]), 0.0, 0.05, p)  # 12 * 2 < 26: app-limited, no change
    assert s[0] == 26


def test_a_latency_step_is_overload_forever_for_vegas_without_a_probe_and_not_after_one():
    # 10 ms -> 20 ms for good. queue = ceil(L / 2) > 6 while L > 12: - 1 a sample down to 12,
    # where ceil(12 / 2) = 6 = beta: held there for ever (noload stays 10 ms).
    never = Params(max_limit=100, initial_limit=20, rule="vegas", vegas_probe_multiplier=1e9)
    s = (20.0, 20.0, (0.010, 1, 0, 1.0))
    for _ in range(1000):
        s = saturated(s, 0.0, 0.020, never)
    assert s[0] == 12 and s[2][0] == 0.010
    # With the source's probe (every jitter * 30 * L samples; jitter 0.5 here: at sample 180 for
    # L = 12) the next sample becomes rtt_noload = 20 ms, then queue 0 <= 1: + 6 a sample.
    probing = Params(max_limit=100, initial_limit=20, rule="vegas")
    s = (12.0, 12.0, (0.010, 179, 0, 0.5))
    s = saturated(s, 0.0, 0.020, probing)  # count 180 >= 0.5 * 30 * 12: probe
    assert s[0] == 12 and s[2][0] == 0.020 and s[2][1] == 0
    s = saturated(s, 0.0, 0.020, probing)
    assert s[0] == 18


def test_envoy_gradient_controller_trace_and_its_minrtt_remeasurement_after_a_step():
    p = Params(max_limit=100, initial_limit=100, rule="envoy", envoy_request_count=2,
               envoy_min_rtt_interval_s=1.0, envoy_jitter=0.0)
    d, s = decide(None, 0.0, 1, p)     # starts measuring minRTT, pinned at min concurrency 3
    assert s[0] == 3 and d.remaining == 2
    s = release(observe(s, 0.01, 0.010, p), 0.01, 1, p)
    s = observe(s, 0.02, 0.010, p)     # 2nd sample ends it: min_rtt = p50 = 10 ms, limit back to 3
    assert s[2][MIN_RTT] == 0.010 and s[0] == 3 and s[2][NEXT_MIN_RTT] == approx(1.02)
    s = observe(s, 0.05, 0.010, p)
    s = observe(s, 0.08, 0.010, p)
    # update at 0.12: gradient = 10 * 1.25 / 10 = 1.25; 3 * 1.25 = 3.75; + sqrt(3.75) = 5.69 -> 5
    _, s = decide(s, 0.125, 0, p)  # (timers fire at the first call after their deadline)
    assert s[0] == 5
    s = observe(s, 0.15, 0.020, p)     # the downstream steps to 20 ms for good
    s = observe(s, 0.20, 0.020, p)
    _, s = decide(s, 0.225, 0, p)      # gradient 12.5 / 20 = 0.625: 3.125 + 1.77 = 4.89 -> 4
    assert s[0] == 4
    for t in (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9):  # 2.5 + sqrt(2.5) = 4.08 -> 4: stuck at 4
        s = observe(s, t, 0.020, p)
        _, s = decide(s, t + 0.025, 0, p)
        assert s[0] == 4
    _, s = decide(s, 1.03, 0, p)       # minRTT timer (1.02): pinned at 3, 4 kept aside
    assert s[0] == 3 and s[2][EPOCH] == approx(1.02)
    s = observe(s, 1.04, 0.030, p)     # started at 1.01, before the measurement: ignored
    assert s[2][SAMPLES] == ()
    s = observe(s, 1.06, 0.020, p)
    s = observe(s, 1.08, 0.020, p)     # min_rtt = 20 ms (the new normal), limit 4 again
    assert s[2][MIN_RTT] == 0.020 and s[0] == 4
    s = observe(s, 1.10, 0.020, p)
    _, s = decide(s, 1.185, 0, p)      # gradient 25 / 20 = 1.25: 5 + sqrt(5) = 7.24 -> 7
    assert s[0] == 7
    s = observe(s, 1.20, 0.020, p)
    _, s = decide(s, 1.285, 0, p)      # 8.75 + 2.96 = 11.7 -> 11: recovering
    assert s[0] == 11


def test_envoy_five_updates_at_the_minimum_force_a_measurement():
    p = Params(max_limit=100, initial_limit=100, rule="envoy", envoy_request_count=1, envoy_jitter=0.0)
    s = observe(decide(None, 0.0, 0, p)[1], 0.01, 0.010, p)  # min_rtt 10 ms; next update 0.11
    t = 0.11
    for _ in range(5):                  # 100 ms samples: gradient 0.5, 1.5 + 1.22 -> 2 -> min 3
        s = observe(s, t - 0.01, 0.100, p)
        _, s = decide(s, t, 0, p)
        t += 0.1
    assert s[0] == 3 and s[2][4] is True  # measuring again (the fifth update at the minimum)


def test_sentinel_bbr_refuses_past_max_qps_times_min_rt_only_when_the_load_is_high():
    p = Params(max_limit=100, initial_limit=100, rule="sentinel_bbr")
    s = decide(None, 0.0, 0, p)[1]
    for k in range(50):                  # 50 successes in the 500 ms bucket [0, 0.5), 20 ms each
        s = observe(s, 0.01 * k, 0.020, p)
    s = observe(s, 0.6, 0.040, p)        # 1 in [0.5, 1.0)
    # max success qps = 50 * 2 = 100; min rt = 20 ms; capacity = 100 * 20 / 1000 = 2
    high = observe_reading(s, 0.7, Reading(cpu=0.1, load=6.0), p)
    assert decide((high[0], 2.0, high[2]), 0.7, 1, p)[0].allowed          # 2 > 2 is false
    d, after = decide((high[0], 3.0, high[2]), 0.7, 1, p)
    assert not d.allowed and after[0] == 2.0                               # 3 > 2: refused
    low = observe_reading(s, 0.7, Reading(cpu=0.1, load=4.0), p)
    assert decide((low[0], 3.0, low[2]), 0.7, 1, p)[0].allowed             # load 4 <= 5: no check
    # at 1.1 the window is [0.5, 1.5): max 1 success -> 2 qps, min rt 40 ms: capacity 0.08,
    # but a single request in flight is never refused
    assert decide((high[0], 1.0, high[2]), 1.1, 1, p)[0].allowed
    assert not decide((high[0], 2.0, high[2]), 1.1, 1, p)[0].allowed


def test_sentinel_cpu_refuses_everything_over_its_threshold():
    p = Params(max_limit=10, initial_limit=10, rule="sentinel_cpu", cpu_threshold=0.8)
    hot = observe_reading(None, 0.0, Reading(cpu=0.85), p)
    assert not decide(hot, 0.0, 1, p)[0].allowed and current_limit(decide(hot, 0.0, 1, p)[1], p) == 0
    cool = observe_reading(hot, 1.0, Reading(cpu=0.8), p)          # 0.8 > 0.8 is false
    assert decide(cool, 1.0, 1, p)[0].allowed
    assert not decide((10.0, 10.0, cool[2]), 1.0, 1, p)[0].allowed  # the max_limit ceiling


def test_gozero_sheds_over_max_flight_while_hot_and_during_its_cool_off():
    p = Params(max_limit=100, initial_limit=100, rule="gozero")
    s = decide(None, 0.0, 0, p)[1]
    for k in range(10):                       # bucket 0 [0, 0.1): 10 passes, ceil(20.1) = 21 ms
        s = observe(s, 0.01 * k, 0.0201, p)
    for k in range(5):                        # bucket 1: 5 passes of 30 ms
        s = observe(s, 0.1 + 0.01 * k, 0.030, p)
    s = observe_reading(s, 0.2, Reading(cpu=0.95), p)
    buckets = s[2][0]
    # at 0.25 (bucket 2 left out): max pass 10, min rt min(21, 30) = 21 ms:
    # max flight = 10 * 21 / 100 ms = 2.1; factor (1 - 0.95) / (1 - 0.9) = 0.5 -> 1.05
    hot = (100.0, 2.0, (buckets, 2.0, 0.95, -math.inf, False))
    d, s = decide(hot, 0.25, 1, p)
    assert not d.allowed and s[0] == approx(1.05) and s[2][3] == 0.25 and s[2][4] is True
    assert decide((100.0, 1.0, hot[2]), 0.25, 1, p)[0].allowed        # 1 in flight <= 1.05
    calm = (100.0, 2.0, (buckets, 1.0, 0.95, -math.inf, False))
    assert decide(calm, 0.25, 1, p)[0].allowed                        # average flying 1.0 <= 1.05
    cooling = observe_reading(s, 0.3, Reading(cpu=0.5), p)           # CPU back down ...
    # ... but dropped 0.55 s ago (< 1 s cool-off): still hot; factor clamp(5, 0.1, 1) = 1: 2.1
    assert decide((100.0, 2.0, cooling[2]), 0.8, 1, p)[0].allowed    # 2 > 2.1 is false
    assert not decide((100.0, 3.0, (*cooling[2][:1], 2.5, *cooling[2][2:])), 0.8, 1, p)[0].allowed
    d, s = decide((100.0, 3.0, (*cooling[2][:1], 2.5, *cooling[2][2:])), 1.3, 1, p)
    assert d.allowed and s[2][4] is False and s[0] == 100            # 1.05 s after: cooled off
    assert release((1.0, 2.0, (buckets, 2.0, 0.5, 0.25, False)), 1.3, 1, p)[2][1] == approx(1.9)  # 2*.9+1*.1


def test_sentinel_bbr_floors_max_success_at_one_and_min_rt_at_one_whole_ms():
    p = Params(max_limit=100, initial_limit=100, rule="sentinel_bbr")
    hot = observe_reading(None, 0.0, Reading(cpu=0.1, load=6.0), p)
    # empty window: max(success, 1) x 2 / 1 s = 2 qps x min RT 5000 ms (statisticMaxRt) = 10
    assert decide((hot[0], 10.0, hot[2]), 0.1, 1, p)[0].allowed            # 10 > 10 is false
    assert not decide((hot[0], 11.0, hot[2]), 0.1, 1, p)[0].allowed
    fast = hot
    for k in range(1000):                # 1000 successes of 0.4 ms: RT 0 whole ms, floored at 1
        fast = observe(fast, 0.0001 * k, 0.0004, p)
    # 2000 qps x 1 ms = 2: two in flight pass (0.8 if the RT were 0.4 ms)
    assert decide((fast[0], 2.0, fast[2]), 0.2, 1, p)[0].allowed
    slow = hot
    for k in range(1000):                # 1.7 ms is 1 whole ms (Sentinel subtracts millisecond clocks)
        slow = observe(slow, 0.0001 * k, 0.0017, p)
    assert not decide((slow[0], 3.0, slow[2]), 0.2, 1, p)[0].allowed     # 3 > 2 (3.4 at 1.7 ms)


def test_gozero_rounds_a_half_millisecond_average_away_from_zero_as_go():
    p = Params(max_limit=100, initial_limit=100, rule="gozero")
    # one bucket (id 9 of 100 ms) with 200 passes, RT sum 5 ms over 2: Go's math.Round(2.5) = 3
    # (Python's round: 2): max flight = 200 x 3 ms / 100 ms = 6 (4 with 2)
    assert max_flight((((9, 200, 5, 2),), 0.0, 0.0, -math.inf, False), 1.05, p) == 6.0


def test_gradient2_warm_up_averages_its_own_sum_not_the_decayed_value():
    p = Params(max_limit=100, initial_limit=20)
    s = (20.0, 0.0, (0.0, 0, 0.0))       # nothing in flight: app-limited, only the long RTT moves
    s = observe(s, 0.0, 0.010, p)        # sum 10 ms, value 10 ms (10 / 10 is not > 2)
    s = observe(s, 0.0, 0.001, p)        # sum 11, value 5.5; 5.5 / 1 > 2: decayed to 5.225
    assert s[2] == (approx(0.005225), 2, approx(0.011))
    s = observe(s, 0.0, 0.001, p)        # sum 12, value 12 / 3 = 4 (not 5.225 averaged in); decayed 3.8
    assert s[2] == (approx(0.0038), 3, approx(0.012))


def test_windowed_limit_feeds_its_rule_one_average_per_window():
    # window_size 10 (the source's minimum), 1 s windows, rule aimd (timeout 0.25 s): one slow
    # request alone would cut the limit (10 -> 9); inside a window it is averaged away.
    p = Params(max_limit=20, initial_limit=10, rule="aimd", window="average", window_size=10)
    s = decide(None, 0.0, 0, p)[1]
    s = observe((10.0, 5.0, s[2]), 0.5, 0.1, p)   # closes the empty first window at once: 1 < 10 samples
    assert s[0] == 10 and s[2][0] == 1.5          # next window ends at 0.5 + clamp(0.2, 1, 1)
    s = observe(s, 0.6, 0.3, p)
    for k in range(9):
        s = observe(s, 0.7 + 0.05 * k, 0.1, p)
    assert s[0] == 10
    s = observe(s, 1.6, 0.1, p)                   # 1.6 > 1.5: avg 1.3 / 11 = 0.118 fast, 5 * 2 >= 10: + 1
    assert s[0] == 11 and s[2][0] == approx(2.6)
    unwindowed = Params(max_limit=20, initial_limit=10, rule="aimd")
    assert observe((10.0, 5.0, ()), 1.0, 0.3, unwindowed)[0] == 9


@pytest.mark.parametrize("rule", ["envoy", "sentinel_bbr", "sentinel_cpu", "gozero"])
def test_window_average_wraps_only_netflix_limits(rule):
    with pytest.raises(PolicyError, match=f"window=average wraps only .*not rule={rule}"):
        build_params("adaptive", Policy(100, 60, 16), {"rule": rule, "window": "average"})


def test_params_pickle_with_their_window():
    p = Params(max_limit=20, initial_limit=10, rule="vegas", window="average")
    assert pickle.loads(pickle.dumps(p)) == p and not hasattr(p, "__dict__")  # the simulator's workers pickle them


@pytest.mark.parametrize("override, field", [
    ({"rule": "vegas", "vegas_alpha": "7"}, "vegas_alpha"),
    ({"rule": "envoy", "envoy_percentile": "100"}, "envoy_percentile"),
    ({"rule": "envoy", "envoy_percentile": "0"}, "envoy_percentile"),
    ({"rule": "envoy", "envoy_interval_s": "0"}, "envoy_interval_s"),
    ({"window": "average", "window_size": "9"}, "window_size"),
    ({"window": "average", "window_min_s": "0.09"}, "window_min_s"),
    ({"window": "average", "window_max_s": "0.05"}, "window_max_s"),
    ({"rule": "gozero", "cpu_threshold": "1.5"}, "cpu_threshold"),
    ({"rule": "gozero", "gozero_buckets": "1"}, "gozero_buckets"),
    ({"rule": "aimd", "backoff_ratio": "0.3"}, "backoff_ratio"),
    ({"rule": "gradient2", "tolerance": "0.9"}, "tolerance"),
])
def test_parameters_outside_a_rules_domain_are_refused_naming_rule_and_field(override, field):
    with pytest.raises(PolicyError) as caught:
        build_params("adaptive", Policy(100, 60, 16), override)
    message = str(caught.value)
    assert "\n" not in message and "adaptive rule " in message and field in message


OPS = st.lists(st.tuples(st.sampled_from(["decide", "observe", "release", "reading"]),
                         st.floats(0.0, 0.5), st.floats(1e-5, 10.0), st.floats(0.0, 1.0)),
               max_size=60)


@settings(max_examples=40, deadline=None)
@given(rule=st.sampled_from(sorted(RULES)), window=st.sampled_from(["none", "average"]), ops=OPS)
def test_limits_stay_within_min_and_max_for_any_sequence(rule, window, ops):
    p = Params(max_limit=8, initial_limit=6, min_limit=4, rule=rule, window=window if rule in WINDOWABLE else "none",
               envoy_request_count=3, envoy_min_rtt_interval_s=1.0)
    low = {"envoy": 3, "sentinel_bbr": 0, "sentinel_cpu": 0, "gozero": 0}.get(rule, p.min_limit)
    s, now = None, 0.0
    for op, step, rtt, cpu in ops:
        now += step
        if op == "decide":
            s = decide(s, now, 1, p)[1]
        elif op == "observe":
            s = observe(s, now, rtt, p)
        elif op == "release":
            s = release(s, now, 1, p)
        else:
            s = observe_reading(s, now, Reading(cpu=cpu, load=cpu * 10), p)
        assert s is not None and low <= s[0] <= p.max_limit and 0 <= s[1] <= p.max_limit


def test_sentinel_cpu_keeps_no_latency_buckets():
    p = Params(max_limit=10, initial_limit=10, rule="sentinel_cpu")
    s = observe(decide(None, 0.0, 1, p)[1], 0.1, 0.02, p)
    assert s[2][0] == ()  # only the BBR rule reads max success x min RT


def test_envoy_decisions_between_its_timers_copy_no_state():
    p = Params(max_limit=100, initial_limit=100, rule="envoy", envoy_request_count=1)
    s = observe(decide(None, 0.0, 0, p)[1], 0.01, 0.005, p)  # the one-sample measurement ends: update due at 0.11
    _, after = decide(s, 0.05, 1, p)
    assert after[2] is s[2]
