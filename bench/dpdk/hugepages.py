"""Hugepages for the DPDK benchmark: reserved for the run, released after.

HugePages(mb).acquire() makes sure MB megabytes of default-size hugepages
are free and a hugetlbfs is mounted on /dev/hugepages: as root it raises
/proc/sys/vm/nr_hugepages by what is missing and mounts hugetlbfs if no
hugetlbfs is mounted there; release() undoes exactly what acquire() did
(the page count it raised, the mount it made), after removing hugepage
files left by processes of this run (prefix DPDK_PREFIX). Without root,
or when the kernel cannot give the pages, acquire() returns the reason and
the caller runs with --no-huge instead. Each DPDK process should also run
with --huge-unlink so that its pages go back to the pool when it exits.
"""
import glob
import math
import os
import subprocess

NR_PATH = "/proc/sys/vm/nr_hugepages"
HUGE_DIR = "/dev/hugepages"


def meminfo():
    out = {}
    with open("/proc/meminfo") as f:
        for line in f:
            k, _, v = line.partition(":")
            out[k.strip()] = int(v.split()[0])
    return out


def hugetlbfs_mounted(path):
    with open("/proc/mounts") as f:
        return any(line.split()[1] == path and line.split()[2] == "hugetlbfs" for line in f)


class HugePages:
    def __init__(self, mb, dpdk_prefix, log=print):
        self.mb = mb
        self.prefix = dpdk_prefix
        self.log = log
        self.page_kb = meminfo().get("Hugepagesize", 2048)
        self.pages = math.ceil(mb * 1024 / self.page_kb)
        self.dir = HUGE_DIR
        self.saved_nr = None  # nr_hugepages before acquire() raised it
        self.mounted = False
        self.made_dir = False

    def acquire(self):
        """None when MB are free on a mounted hugetlbfs, else why not."""
        try:
            free = meminfo().get("HugePages_Free", 0)
            root = os.geteuid() == 0
            if free < self.pages:
                if not root:
                    return (f"{free} free hugepages of {self.page_kb} kB, {self.pages} needed, "
                            "and not root to reserve them")
                with open(NR_PATH) as f:
                    nr = int(f.read())
                want = nr + self.pages - free
                self.saved_nr = nr
                with open(NR_PATH, "w") as f:
                    f.write(str(want))
                got = meminfo().get("HugePages_Free", 0)
                self.log(f"hugepages: nr_hugepages {nr} -> {want} ({self.pages} x "
                         f"{self.page_kb} kB needed, {got} free)")
                if got < self.pages:
                    self.release()
                    return (f"the kernel gave {got} free hugepages of {self.page_kb} kB, "
                            f"{self.pages} needed")
            if not hugetlbfs_mounted(self.dir):
                if not root:
                    self.release()
                    return f"no hugetlbfs on {self.dir} and not root to mount one"
                if not os.path.isdir(self.dir):
                    os.makedirs(self.dir)
                    self.made_dir = True
                subprocess.run(["mount", "-t", "hugetlbfs", "nodev", self.dir], check=True)
                self.mounted = True
                self.log(f"hugepages: mounted hugetlbfs on {self.dir}")
            if not os.access(self.dir, os.W_OK):
                self.release()
                return f"{self.dir} not writable"
            return None
        except (OSError, ValueError, subprocess.CalledProcessError) as e:
            self.release()
            return f"cannot reserve hugepages: {e}"

    def cleanup_files(self):
        """Removes hugepage files a process of this run left behind."""
        for path in glob.glob(os.path.join(self.dir, self.prefix + "*")):
            try:
                os.unlink(path)
            except OSError:
                pass

    def release(self):
        if os.path.isdir(self.dir) and hugetlbfs_mounted(self.dir):
            self.cleanup_files()
        if self.mounted:
            r = subprocess.run(["umount", self.dir], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
            if r.returncode != 0:
                self.log(f"hugepages: umount {self.dir}: {r.stdout.strip()}")
            else:
                self.mounted = False
                if self.made_dir:
                    try:
                        os.rmdir(self.dir)
                    except OSError:
                        pass
                    self.made_dir = False
        if self.saved_nr is not None:
            try:
                with open(NR_PATH, "w") as f:
                    f.write(str(self.saved_nr))
                self.log(f"hugepages: nr_hugepages back to {self.saved_nr} "
                         f"({meminfo().get('HugePages_Total', '?')} now)")
            except OSError as e:
                self.log(f"hugepages: cannot restore nr_hugepages: {e}")
            self.saved_nr = None
