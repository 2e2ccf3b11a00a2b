"""The hostile benchmark's reference: what an unbounded token bucket admits on a schedule."""

from benchmarks.hostile import BURST, unbounded_admissions


def test_the_unbounded_reference_is_the_token_bucket_on_the_bursts_decision_times():
    # 100 per 60 s: a full bucket admits 100 of the first burst; 5 s later 100 x 5 / 60 = 8.33
    # tokens have come back, so 8 of the second burst; nothing is forgotten in between
    assert unbounded_admissions([0.0] * BURST + [5.0] * BURST) == 108
    assert unbounded_admissions([0.0] * BURST) == 100
