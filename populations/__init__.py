"""Population manager: policy store, league, matchmaking, ratings, runners and entry points."""
