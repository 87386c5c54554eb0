"""Which partition a keyed Kafka message goes to, as every Kafka client decides it.

The Java client's rule (murmur2 of the key, sign bit cleared, modulo the partition count),
so a key keeps its partition, and its events their order, whichever producer sends them.
aiokafka computes it byte by byte in Python for every message; the relay computes it here
a word at a time, which cost a quarter of its time per row.
"""

from __future__ import annotations

import struct

_SEED = 0x9747B28C
_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """MurmurHash2 as org.apache.kafka.common.utils.Utils.murmur2, unsigned."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    whole = length // 4
    for k in struct.unpack_from(f"<{whole}I", data):
        k = (k * _M) & _MASK
        k = ((k ^ (k >> 24)) * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    tail = data[whole * 4 :]
    if tail:
        if len(tail) >= 3:
            h ^= tail[2] << 16
        if len(tail) >= 2:
            h ^= tail[1] << 8
        h = ((h ^ tail[0]) * _M) & _MASK
    h = ((h ^ (h >> 13)) * _M) & _MASK
    return h ^ (h >> 15)


def partition_for(key: bytes, partitions: int) -> int:
    """The partition of a keyed message among `partitions` (numbered from 0)."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions
