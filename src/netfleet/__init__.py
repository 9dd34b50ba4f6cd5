"""netfleet."""
