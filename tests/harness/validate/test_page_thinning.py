"""validate's page-load experiment replays fewer users when each has a key of its own on one
store: a user's decisions are then the same whatever the others do, so a day-long window (27,000
pages per user at its peak) is read from one user, not twenty, and the users' rates are read
without the abusive client; users that share a key are all kept, and the abuser with them."""

from __future__ import annotations

from dataclasses import replace

import pytest

from contract.schema import LEGIT
from harness.validate.sim import PAGE_SAMPLE, Deployment, PageTraffic, page_metric, page_result, run
from targets.algorithms import Policy, build_params

DAY, HOUR = 86_400.0, 3_600.0


def traffic(window_s: float, **changes: object) -> PageTraffic:
    """20 users at 30 requests a minute in pages of 8 (a page every 16 s), one abuser at 5x."""
    return replace(PageTraffic(users=20, page_load=8, cost=1.0, peak_requests_per_min=30.0, limit=100.0,
                               window_s=window_s, abuse_factor=5.0, abusers=1, seed=7), **changes)


@pytest.mark.parametrize(("window_s", "users"), [
    (DAY, 1),  # 5 days: 27,000 pages per user, one user is 5.4 times PAGE_SAMPLE
    (HOUR, 5),  # 5 hours: 1,125 pages per user, 5,000 pages take ceil(4.44) users
    (1.0, 20),  # at least 20 pages per user (320 s): 400 pages, every user kept
])
def test_users_of_their_own_keys_are_thinned_to_the_page_sample(window_s, users):
    assert PAGE_SAMPLE == 5_000
    assert traffic(window_s).thinned().users == users


@pytest.mark.parametrize("shared", [{"shared_key": True}, {"one_key": True}])
def test_users_that_share_a_key_are_all_kept(shared):
    assert traffic(DAY, **shared).thinned().users == 20


def test_the_users_kept_are_decided_as_in_the_whole_experiment():
    dep = Deployment("fixed_window", build_params("fixed_window", Policy(100, HOUR)), 100.0, HOUR)
    whole, thinned = run(dep, traffic(HOUR).arrivals()), run(dep, traffic(HOUR).thinned().arrivals())
    kept = set(thinned["client_id"]) - {"abuser-0"}  # the abuser, drawn after the users, is a new draw
    assert kept == {f"user-{i}" for i in range(5)}
    columns = ["client_id", "t", "allowed"]
    same = [frame[frame["client_id"].isin(kept)][columns].sort_values(["client_id", "t"], ignore_index=True)
            for frame in (whole, thinned)]
    assert same[0].equals(same[1])
    legit = thinned[thinned["client_class"] == LEGIT]
    assert 0 < (~legit["allowed"]).sum() < len(legit)  # the limit bites some pages: the decisions matter


def test_the_users_rates_are_read_without_the_abuser_only_where_it_decides_nothing_they_see():
    dep = Deployment("fixed_window", build_params("fixed_window", Policy(200, HOUR)), 200.0, HOUR)
    own, shared = traffic(HOUR), traffic(HOUR, one_key=True)
    for metric in ("legit_rejection_rate", "page_load_429_rate"):
        # keys of their own: the same figure with the abuser and without
        with_abuser = getattr(page_result(dep, own), metric)
        assert page_metric(dep, own, metric) == getattr(page_result(dep, replace(own, abusers=0)), metric) == with_abuser
        # one key for everyone: the abuser spends it, so it stays
        assert page_metric(dep, shared, metric) == getattr(page_result(dep, shared), metric)
        assert page_metric(dep, shared, metric) > getattr(page_result(dep, replace(shared, abusers=0)), metric)
    assert page_metric(dep, own, "abusive_admission") == page_result(dep, own).abusive_admission > 0
