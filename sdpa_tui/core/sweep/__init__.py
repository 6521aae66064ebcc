"""A sweep over sequence lengths: the lengths, the points measured, and what they show."""
