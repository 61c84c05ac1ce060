"""Timing: cache flush, device-side spans over all streams, paired interleaved samples, statistics."""
