"""sdpa-tui: a live terminal monitor for PyTorch's scaled_dot_product_attention backends."""

__version__ = "0.1.0"
