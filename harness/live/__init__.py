"""The live runner: targets, Locust, CPU sampling and store events for one run; run.json."""
