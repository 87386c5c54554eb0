"""The relay's partitioning is Kafka's: every key lands where aiokafka would put it."""

from __future__ import annotations

import os
import uuid

from aiokafka.partitioner import DefaultPartitioner
from aiokafka.partitioner import murmur2 as aiokafka_murmur2

from servicekit.partitions import murmur2, partition_for


def test_murmur2_is_the_java_clients_for_keys_of_every_length() -> None:
    keys = [os.urandom(length) for length in range(0, 70) for _ in range(20)]
    keys += [str(uuid.uuid4()).encode() for _ in range(500)]
    for key in keys:
        assert murmur2(key) == aiokafka_murmur2(key), key


def test_a_key_gets_the_partition_the_default_partitioner_gives_it() -> None:
    for count in (1, 3, 7, 12):
        partitions = list(range(count))
        for _ in range(300):
            key = str(uuid.uuid4()).encode()
            assert partition_for(key, count) == DefaultPartitioner()(key, partitions, partitions)
