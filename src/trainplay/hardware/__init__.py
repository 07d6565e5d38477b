"""Hardware level of MD-Roofline: what machines can give.

Cluster descriptions (YAML in and out), a catalog of devices and links with sources, and the
achievable peaks (APF, APM, APB) measured on the machines trainplay actually runs on.
"""

from trainplay.hardware.cluster import ClusterFileError, dump_cluster, load_cluster, parse_cluster
from trainplay.hardware.spec import (
    ClusterSpec,
    DeviceSpec,
    LinkSpec,
    NodeSpec,
    Peaks,
    Window,
    Worker,
)

__all__ = [
    "ClusterFileError",
    "ClusterSpec",
    "DeviceSpec",
    "LinkSpec",
    "NodeSpec",
    "Peaks",
    "Window",
    "Worker",
    "dump_cluster",
    "load_cluster",
    "parse_cluster",
]
