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

# A scenario file (tunbed run, tunbed intranet) or a topology file the runner reads itself
# (--topology, topology =, ndr's and failover's): a hand-written file of a few hundred bytes;
# 1 MiB is far beyond any, and short of what a typo (/dev/zero, a log) would read into memory.
SCENARIO_BYTES = 1 << 20
# The runs of a matrix (every point times the repeats): 100,000 is months of measuring at the
# shortest run (1 s plus setup); past it the list of runs itself would cost memory.
MATRIX_RUNS = 100_000
# A raw record (runs/*.json, searches/*.json) or meta.json: a record holds every CPU sample of
# its run (4 Hz, a row per thread watched); an hour's run of 256 threads is about 100 MiB.
RECORD_BYTES = 256 << 20
# The files of one results directory that `tunbed report` reads.
RECORD_FILES = 100_000
# A point's key (point.key) becomes part of file names: ASCII letters, digits, . _ + -.
KEY_CHARS = 200
# What a contract driver's call prints that the runner keeps (the raw record keeps what up
# printed): the first 64 KiB of its standard output, the last 4 KiB of its standard error;
# the line quoted in a failure, at most 300 characters.
DRIVER_OUTPUT_BYTES = 64 << 10
DRIVER_ERROR_BYTES = 4 << 10
DRIVER_LINE_CHARS = 300
# How long a contract driver's call may take before it is killed with every process it started
# that is still in its process group (CONTRIBUTING.md, "Adding a gateway").
DRIVER_CALL_S = 120
# A gateway's worker says its thread id in the telemetry once it runs (gregw's workers store it
# first thing; a ctl reply can come before a thread just started has run): how long a budget
# waits for every one before the point fails.
THREADS_READY_S = 5
# The PIDs a driver may name (pids): tunbed-sample watches at most 256 processes on a machine
# (sample/sampler.h, SAMPLER_PIDS), shared by both gateways' processes and the generators'.
PIDS_PER_DRIVER = 64
# A PID is above 1 (init is not a gateway's) and below the kernel's PID_MAX_LIMIT, 2^22, the
# largest pid_max any kernel allows.
PID_MAX = 1 << 22
# What one record may hold that the report draws a row or a column of: CPUs per machine (the
# per-core plot is 1.7 inches a CPU, and a picture at most 2^16 pixels high) and machines
# (a column each).
RECORD_CPUS = 256
RECORD_HOSTS = 64
# CPU budgets per machine in a record: gregw's workers at most (64, CONFIG_MAX_WORKERS) on each of
# the gateways a machine can hold (gwa, gwb, gwb2), with room for a contract driver's threads.
RECORD_BUDGETS = 1024
