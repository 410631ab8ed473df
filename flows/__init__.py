"""flows layer."""
