"""``ray start`` for a cluster of nodes on this one machine that listens on 127.0.0.1 only.

With multi-node clusters enabled, Ray turns a loopback ``--node-ip-address`` (and a
``127.0.0.1:port`` address) into the machine's routable address, so a test cluster would
listen on the network. Here the loopback address is kept as given. Used by the
``loopback_cluster`` fixture (tests/ray_cluster.py):
``python tests/populations/loopback_ray.py start --head ...``.
"""

import sys

from ray._private import services


def main() -> int:
    services.resolve_ip_for_localhost = lambda host: host
    services.get_node_ip_address = lambda address=None: "127.0.0.1"
    from ray.scripts.scripts import main as ray_main

    return ray_main()


if __name__ == "__main__":
    sys.exit(main())
