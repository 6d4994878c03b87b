"""What machine a benchmark ran on, for every bench/results/*.json."""
import os


def cpu_info():
    """{"model", "cores", "avx2", "avx512", "avx512_flags"} from
    /proc/cpuinfo (model "" when it cannot be read)."""
    model, flags = "", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                k, _, v = line.partition(":")
                k = k.strip()
                if k == "model name" and not model:
                    model = v.strip()
                elif k == "flags" and not flags:
                    flags = set(v.split())
    except OSError:
        pass
    avx512 = sorted(x for x in flags if x.startswith("avx512"))
    return {"model": model, "cores": os.cpu_count(), "avx2": "avx2" in flags,
            "avx512": "avx512f" in flags, "avx512_flags": avx512}
