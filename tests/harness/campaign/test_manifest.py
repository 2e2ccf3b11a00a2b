"""Product YAML read with the line of every value: a multi-document manifest, paths written as a
user reads them, and the fleet a Deployment or an HPA declares."""

from __future__ import annotations

import pytest

from harness.campaign.peers import PeerError
from harness.campaign.peers.manifest import documents, dotted, replicas_in

MANIFEST = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  replicas: 3
---
# an empty document between two
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
spec:
  minReplicas: 2
  maxReplicas: 12
---
http:
  middlewares:
    rl:
      rateLimit:
        average: 100
        sourceCriterion:
          ipStrategy: {depth: 1}
  list:
    - a
    - {b: 2}
"""


def test_every_value_has_its_line_and_a_path_a_user_reads():
    deploy, hpa, traefik = documents(MANIFEST, "m.yaml")
    assert deploy.get(("spec", "replicas")) == 3 and deploy.line(("spec", "replicas")) == 5
    assert traefik.get(("http", "middlewares", "rl", "rateLimit", "average")) == 100
    assert traefik.where("m.yaml", ("http", "middlewares", "rl", "rateLimit", "average")) == \
        "m.yaml:19 (http.middlewares.rl.rateLimit.average)"
    assert traefik.line(("http", "list", 1, "b")) == 24 and dotted(("http", "list", 1, "b")) == "http.list[1].b"
    # a path that is not there: the line of its nearest ancestor, the default value
    assert traefik.line(("http", "middlewares", "rl", "rateLimit", "burst")) == 18
    assert traefik.get(("http", "middlewares", "rl", "rateLimit", "burst"), 1) == 1
    assert hpa.get(("spec", "maxReplicas")) == 12


def test_the_fleet_is_an_hpas_maximum_else_a_deployments_replicas():
    docs = documents(MANIFEST, "m.yaml")
    assert replicas_in(docs) == 12
    assert replicas_in(docs[:1]) == 3
    assert replicas_in(docs[2:]) is None


@pytest.mark.parametrize(("text", "message"), [
    ("a: 1\nb: [1, 2\n", "m.yaml:3: not valid YAML"),
    ("base: &b {x: 1}\nother:\n  <<: *b\n", "line 3: YAML merge keys (<<) are not read"),
])
def test_bad_yaml_is_one_error_naming_the_line(text, message):
    with pytest.raises(PeerError, match=message.replace("(", r"\(").replace(")", r"\)")):
        documents(text, "m.yaml")
