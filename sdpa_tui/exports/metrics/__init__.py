"""Prometheus: the lab's and a watched job's metrics, and the endpoint that serves them."""
