#pragma once
// tg::optim: SGD, Adam, AdamW with parameter groups, LR schedulers, gradient clipping.
#include "adam.hpp"
#include "clip.hpp"
#include "lr_scheduler.hpp"
#include "sgd.hpp"
