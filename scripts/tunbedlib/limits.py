"""The runner's limits in one place: each number with where it comes from.

Every input that crosses a trust boundary (an inventory, a scenario file, a result directory, a
driver's output) is bounded by a name here, and refused in one line when it is exceeded.
"""

# Inventories and hosts (ansible-inventory, ssh).

# An inventory is read whole by ansible-inventory: one of hundreds of hosts is tens of KiB.
INVENTORY_FILE_MAX = 1 << 20
# ansible-inventory reads an inventory of 256 hosts in 0.8 s here; YAML aliases that nest (808
# bytes, docs/security.md) or an INI host range (h[0:9999999]) expand without end.
INVENTORY_TIMEOUT_S = 30
# Its JSON: about 150 bytes a host (38 KB for 256), with room for long variables.
INVENTORY_OUTPUT_MAX = 16 << 20
# Its address space (RLIMIT_AS): 51 MiB at most for 256 hosts here; an expansion stops at this.
INVENTORY_MEMORY_MAX = 1 << 30
# Hosts in one inventory: each is one SSH connection and a thread while the run opens.
INVENTORY_HOSTS_MAX = 256
# A value tunbed uses (an address, a path, ssh's arguments): PATH_MAX.
INVENTORY_VALUE_MAX = 4096
# A run's prefix, as tunbed-topo bounds it (TOPO_PREFIX_LEN without its NUL): it names the
# namespaces and, on a host, the state directory PREFIX-NAME.
PREFIX_MAX = 15
# An inventory's host name: the state directory /run/tunbed/PREFIX-NAME on its host is one
# file name (NAME_MAX 255) with the longest prefix and its '-'.
HOST_NAME_MAX = 255 - PREFIX_MAX - 1
# ansible_host as a name: RFC 1035's 253 characters in text, labels of up to 63.
DNS_NAME_MAX = 253
DNS_LABEL_MAX = 63
# An interface name: IFNAMSIZ (16) with its NUL.
IFNAME_MAX = 15
# A user name: what useradd(8) takes on Linux (UT_NAMESIZE).
USER_NAME_MAX = 32
# A PID read back from a state file: PID_MAX_LIMIT on 64-bit Linux.
PID_MAX = 1 << 22
# A state file root reads to decide what to signal (a failover run's pids: a line per
# process, a dozen processes a run).
STATE_FILE_MAX = 64 << 10

# Scenario files, matrices, records and drivers' output.
