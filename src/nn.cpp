// The definitions of tg/impl/nn/ and tg/impl/optim/, compiled once into the tg::tg library.
#include <tg/impl/nn/functional.hpp>
#include <tg/impl/nn/init.hpp>
#include <tg/impl/nn/layers.hpp>
#include <tg/impl/nn/loss.hpp>
#include <tg/impl/nn/module.hpp>
#include <tg/impl/nn/rnn.hpp>
#include <tg/impl/optim/adam.hpp>
#include <tg/impl/optim/clip.hpp>
#include <tg/impl/optim/lr_scheduler.hpp>
#include <tg/impl/optim/optimizer.hpp>
#include <tg/impl/optim/sgd.hpp>
