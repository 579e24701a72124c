// The fields any layer with parameters has: where its parameters start
// (init_from, a checkpoint's) and how fast they learn (lr_mult). Stacked RBMs
// and the auto-encoder unfolded from them port parameters this way (SINGA
// §4.2.2: "through checkpoint").
#pragma once

#include "config/fields.h"
#include "layers/layer.h"

namespace shoal {

// Reads `init_from` and `lr_mult` into the layer's parameters:
//   init_from: PATH          each parameter from the checkpoint's of the same name
//   init_from: PATH:LAYER    each from LAYER's parameter of the same suffix (weight, bias, ...)
//   init_from: {SUFFIX: PATH:PARAM, ...}   the named ones, PARAM^T transposed (2-D)
//   lr_mult: X               learning rate × X for all of them (0: never updated)
// A layer without parameters refuses both.
// PATH is a merged checkpoint, one step's server files, or a checkpoint
// directory (its newest complete step); written absolute into the plan.
Status ReadParamFields(const Fields& fields, Layer* layer);

// Whether `param`'s init_from names a parameter of its checkpoint with its
// shape (transposed where asked): dl-plan's check, before anything runs.
Status CheckInitFrom(const Param& param);

// The whole values of a parameter initialised from a checkpoint.
Status LoadInitFrom(const std::string& name, const Shape& shape, const ParamInit& init,
                    std::vector<float>* values);

}  // namespace shoal
