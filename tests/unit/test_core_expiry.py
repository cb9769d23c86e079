import pytest

from memorywire.core.clock import DAY_MS
from memorywire.core.expiry import ExpiryFacts, needs_recall_tracking, policy_matches
from memorywire.wire.models import ExpirePolicy, MemoryType

NOW = 1_800_000_000_000
SEM = MemoryType.SEMANTIC
EPI = MemoryType.EPISODIC


def days_ago(d: float) -> int:
    return NOW - int(d * DAY_MS)


@pytest.mark.parametrize(
    ("policy", "facts", "expected"),
    [
        (ExpirePolicy(older_than_days=30), ExpiryFacts(SEM, days_ago(31)), True),
        (ExpirePolicy(older_than_days=30), ExpiryFacts(SEM, days_ago(30)), False),
        (ExpirePolicy(older_than_days=30), ExpiryFacts(SEM, days_ago(1)), False),
        (ExpirePolicy(type=EPI), ExpiryFacts(EPI, NOW), True),
        (ExpirePolicy(type=EPI), ExpiryFacts(SEM, NOW), False),
        (ExpirePolicy(confidence_below=0.5), ExpiryFacts(SEM, NOW, 0.4), True),
        (ExpirePolicy(confidence_below=0.5), ExpiryFacts(SEM, NOW, 0.5), False),
        (ExpirePolicy(confidence_below=0.5), ExpiryFacts(SEM, NOW, None), False),
        # keys are ANDed
        (ExpirePolicy(type=EPI, older_than_days=7), ExpiryFacts(EPI, days_ago(8)), True),
        (ExpirePolicy(type=EPI, older_than_days=7), ExpiryFacts(SEM, days_ago(8)), False),
        (ExpirePolicy(type=EPI, older_than_days=7), ExpiryFacts(EPI, days_ago(6)), False),
        # never recalled: creation counts as the last activity
        (ExpirePolicy(no_recall_in_days=10), ExpiryFacts(SEM, days_ago(11)), True),
        (ExpirePolicy(no_recall_in_days=10), ExpiryFacts(SEM, days_ago(9)), False),
        (ExpirePolicy(no_recall_in_days=10), ExpiryFacts(SEM, days_ago(40), 1.0, days_ago(5)),
         False),
        (ExpirePolicy(no_recall_in_days=10), ExpiryFacts(SEM, days_ago(40), 1.0, days_ago(12)),
         True),
    ],
)
def test_policy_matches(policy: ExpirePolicy, facts: ExpiryFacts, expected: bool) -> None:
    assert policy_matches(policy, facts, NOW) is expected


def test_needs_recall_tracking() -> None:
    assert needs_recall_tracking(ExpirePolicy(no_recall_in_days=1))
    assert not needs_recall_tracking(ExpirePolicy(older_than_days=1))
