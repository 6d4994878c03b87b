#!/usr/bin/env python3
"""Reference outputs for tests/unit/test_sim_rng.c, computed independently
of sim/rng.c from the published algorithms: splitmix64 (Steele, Lea, Flood
2014; Vigna's splitmix64.c) and xoshiro256** (Blackman, Vigna 2018), the
stream seeding sim/rng.h documents, and the rejection rule of
sim_rng_below(). Prints the C tables the test embeds:

    python3 tests/unit/data/sim/rng_ref.py
"""
M = (1 << 64) - 1
G1 = 0x9E3779B97F4A7C15
G2 = 0xD1B54A32D192ED03


def mix(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
    return z ^ (z >> 31)


def rotl(x, k):
    return ((x << k) | (x >> (64 - k))) & M


class Xoshiro:
    def __init__(self, s):
        self.s = list(s)

    def next(self):
        s = self.s
        out = (rotl((s[1] * 5) & M, 7) * 9) & M
        t = (s[1] << 17) & M
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 45)
        return out


def stream(seed, st):
    return Xoshiro([mix((seed + n * G1) & M) ^ mix((st + n * G2) & M) for n in range(1, 5)])


def below(g, n):
    thr = (1 << 64) % n
    while True:
        x = g.next()
        if x >= thr:
            return x % n


def c_list(vals):
    return ", ".join("0x%016xULL" % v for v in vals)


def main():
    x = 1234567
    out = []
    for _ in range(5):
        x = (x + G1) & M
        out.append(mix(x))
    print("/* splitmix64, seed 1234567 */")
    print("{" + c_list(out) + "}")
    g = Xoshiro([1, 2, 3, 4])
    print("/* xoshiro256**, state {1, 2, 3, 4} */")
    print("{" + c_list([g.next() for _ in range(8)]) + "}")
    print("/* sim_rng_init(seed, stream): first 4 outputs */")
    for seed, st in [(0, 0), (42, 0), (42, 1), (M, 7), (7, M)]:
        g = stream(seed, st)
        print("{0x%xULL, 0x%xULL, {%s}}," % (seed, st, c_list([g.next() for _ in range(4)])))
    print("/* sim_rng_below(n) on stream (1, 2): 6 draws */")
    for n in [1, 6, 1000000007, (1 << 63) + 1, M]:
        g = stream(1, 2)
        print("{0x%xULL, {%s}}," % (n, c_list([below(g, n) for _ in range(6)])))


if __name__ == "__main__":
    main()
