"""tunbed provision and tunbed down --hosts (docs/hosts.md). Provisioning is Ansible's:
ansible-playbook runs scripts/ansible/provision.yml on the inventory with the Debian package
of this build (scripts/package), and what changed is read from its JSON report, per host.
Down connects to every host and stops what a crashed run left there (by the PIDs it recorded)
and undoes what it changed."""

import json
import os
import re
import subprocess
import tempfile

from . import hosts as hostmod
from . import inventory
from .common import ROOT, Failure, log

PLAYBOOK = os.path.join(ROOT, "scripts", "ansible", "provision.yml")
PACKAGE = os.path.join(ROOT, "scripts", "package")


def package():
    p = subprocess.run([PACKAGE], capture_output=True, text=True)
    if p.returncode:
        raise Failure((p.stderr.strip().splitlines() or ["scripts/package failed"])[-1])
    return p.stdout.strip()


def ansible_env():
    # Pipelining: each task's module goes to the host's Python over the connection that runs
    # it, not copied into a temporary file first (one SSH session a task, not four); sudo
    # must then not require a tty (Debian's does not). ANSIBLE_PIPELINING in the environment
    # decides instead (docs/hosts.md).
    return {"ANSIBLE_PIPELINING": "True"} | os.environ | {
        "ANSIBLE_STDOUT_CALLBACK": "default", "ANSIBLE_NOCOLOR": "1", "ANSIBLE_FORCE_COLOR": "0",
        "ANSIBLE_HOST_KEY_CHECKING": "True", "ANSIBLE_RETRY_FILES_ENABLED": "False",
        "ANSIBLE_DEPRECATION_WARNINGS": "False", "ANSIBLE_INVENTORY_UNPARSED_FAILED": "True",
        # As inventory.load reads it: no plugin that runs the file or its templates.
        "ANSIBLE_INVENTORY_ENABLED": inventory.PLUGINS,
        "ANSIBLE_VARS_ENABLED": inventory.VARS_PLUGINS,
        "ANSIBLE_PYTHON_INTERPRETER": "auto_silent", "ANSIBLE_TIMEOUT": "15",
        "ANSIBLE_DISPLAY_SKIPPED_HOSTS": "False",
        # No connection outlives the playbook (Ansible's default keeps them 60 s).
        "ANSIBLE_SSH_ARGS": "-o ControlMaster=auto -o ControlPersist=no"}


TASK = re.compile(r"^TASK \[(.*)\] \*+$")
RESULT = re.compile(r"^(ok|changed|fatal|skipping): \[([^\]]+)\](?:: (UNREACHABLE|FAILED)! => "
                    r"(.*))?$")


def outcomes(text):
    """{host: (changed tasks, failure or None)} from ansible-playbook's default output."""
    task, out = None, {}
    for line in text.splitlines():
        m = TASK.match(line)
        if m:
            task = m.group(1)
            continue
        m = RESULT.match(line)
        if not m:
            continue
        what, host, fail, detail = m.groups()
        changed, failure = out.get(host, ([], None))
        if what == "changed":
            changed.append(task)
        elif what == "fatal":
            try:
                msg = json.loads(detail).get("msg", detail)
            except ValueError:
                msg = detail
            failure = failure or f"{task}: {str(msg).strip().splitlines()[0] if msg else fail}"
        out[host] = (changed, failure)
    return out


def provision(inv):
    """Runs the playbook; prints per host what it changed; 0 when every host is done."""
    deb = package()
    log(f"provisioning {len(inv.all())} hosts with {os.path.basename(deb)}")
    p = subprocess.run(["ansible-playbook", "-i", inv.path, PLAYBOOK, "-e",
                        json.dumps({"tunbed_deb": deb})], capture_output=True, text=True,
                       env=ansible_env())
    results = outcomes(p.stdout)
    if p.returncode and not results:
        raise Failure("ansible-playbook: " + ((p.stderr.strip() or p.stdout.strip())
                                              .splitlines() or ["failed"])[-1]
                      .replace("ERROR! ", ""))
    failed = 0
    for h in inv.all():
        changed, failure = results.get(h.name, ([], "not provisioned (no result)"))
        if failure:
            failed += 1
            print(f"{h.label()}: FAILED: {failure}")
        elif changed:
            print(f"{h.label()}: changed: {', '.join(changed)}")
        else:
            print(f"{h.label()}: unchanged (up to date)")
    if failed or p.returncode:
        raise Failure(f"provisioning failed on {failed or 'some'} of {len(inv.all())} hosts")
    return 0


def down(inv, prefix):
    """On every host at once: what a run of prefix left (processes by their PIDs, changes
    undone). Each host's line in the inventory's order."""
    ctl = tempfile.mkdtemp(prefix="tunbed-ssh-")

    def clean(h):
        try:
            h.open()
            done = h.cleanup_state()
            return f"{h.label()}: " + ("; ".join(done) if done else "nothing left"), None
        except Failure as e:
            return None, str(e)
        finally:
            h.close()

    try:
        # Every host checked (hosts.Ssh) before any is connected to.
        hosts = [hostmod.Ssh(spec, prefix, ctl) for spec in inv.all() if spec.reach]
        results = hostmod.on_each(hosts, clean)
    finally:
        os.rmdir(ctl) if not os.listdir(ctl) else None
    for done, err in results:
        if err:
            log(err)
        else:
            print(done)
    return 1 if any(err for _, err in results) else 0
