"""SMPyBandits' UCB in a plain choice()/draw()/getReward() loop.

The reference of docs/performance.md's per-step comparison: the policy and
the arms of SMPyBandits (https://github.com/SMPyBandits/SMPyBandits, MIT
licence), imported from a checkout, with nothing of their simulation
framework around them, on the five Bernoulli arms of dpbandit's machine
unit U (seed 001, Figure 4).

Usage, with Debian's python3-numpy:

    git clone https://github.com/SMPyBandits/SMPyBandits /tmp/smpy
    /usr/bin/python3 bench/smpybandits_ucb.py /tmp/smpy 1000000

and pair it with dpbandit's unit on the same machine, interleaved:

    dpbandit run --mode iid --algo ucb1 \\
      --env bernoulli:0.75,0.625,0.5,0.375,0.25 --horizon 100000000 \\
      --runs 1 --workers 1 --out /tmp/u --force

Only the policy and the arms are imported (their folders go on the path),
so that the package's plotting dependencies are not needed.
"""

import sys
import time
import warnings

root, steps = sys.argv[1], int(sys.argv[2])
sys.path[:0] = [root + "/SMPyBandits/Policies", root + "/SMPyBandits/Arms"]
warnings.simplefilter("ignore")  # 0/0 in the indices of unplayed arms

import numpy as np  # noqa: E402
from Bernoulli import Bernoulli  # noqa: E402
from UCB import UCB  # noqa: E402

np.random.seed(1)
arms = [Bernoulli(m) for m in (0.75, 0.625, 0.5, 0.375, 0.25)]
policy = UCB(len(arms))
policy.startGame()
start = time.perf_counter()
for t in range(steps):
    arm = policy.choice()
    policy.getReward(arm, arms[arm].draw(t))
elapsed = time.perf_counter() - start
print(f"{steps} steps in {elapsed:.3f} s: {steps / elapsed:.0f} steps/s; pulls {list(policy.pulls)}")
