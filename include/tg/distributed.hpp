#pragma once
// Opt-in: tg::distributed (process groups and collectives over MPI) and
// nn::DistributedDataParallel. Include it where a program trains on several processes; the MPI
// library is opened at run time (docs/distributed.md), so nothing more is linked.
#include "tg.hpp"

#include "distributed/distributed.hpp"
