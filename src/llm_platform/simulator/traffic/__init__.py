"""The requests: arrival times and token counts of a day, and the family of generated days."""
