#include "layers/data_layer.h"

namespace shoal {

Status DataLayer::Setup(const Fields& fields, const std::vector<const Layer*>& srcs) {
  if (!srcs.empty()) return fields.Error("a data layer has no srclayers");
  std::vector<int> shape;
  SHOAL_RETURN_IF_ERROR(fields.IntList("shape", &shape, 1, kMaxDataDim, 4));
  if (shape.empty()) return fields.Error("missing field 'shape' (per record, e.g. [1, 28, 28])");
  for (int d : shape)
    if (d <= 0) return fields.FieldError("shape", "must hold positive sizes");
  out_shape_ = shape;
  return Status::Ok();
}

}  // namespace shoal
