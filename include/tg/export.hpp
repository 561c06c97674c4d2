#pragma once
// Opt-in: tg::export_model, which writes a model's methods as standalone files (export/). Include
// it where a program exports; nothing else needs it.
#include "tg.hpp"

#include "export/export.hpp"
