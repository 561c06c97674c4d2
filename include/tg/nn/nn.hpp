#pragma once
// tg::nn: modules with dotted parameter names, layers, initializers, losses (torch.nn).
#include "layers.hpp"
#include "loss.hpp"
#include "rnn.hpp"
