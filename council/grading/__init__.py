"""Driving rows through both rounds: the coordinator, judge pools, budget and stop control."""
