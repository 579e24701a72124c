#include "graph/param_fields.h"

#include <filesystem>

#include "ckpt/checkpoint_set.h"

namespace shoal {
namespace {

// "PATH:NAME" at its last colon, when what follows names something (no '/').
bool SplitSource(const std::string& text, std::string* path, std::string* name) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size() ||
      text.find('/', colon) != std::string::npos)
    return false;
  *path = text.substr(0, colon);
  *name = text.substr(colon + 1);
  return true;
}

std::string Absolute(const std::string& path) {
  std::error_code ec;
  const auto absolute = std::filesystem::absolute(path, ec);
  return ec ? path : absolute.lexically_normal().string();
}

std::string Suffix(const Layer& layer, const Param& p) { return p.name.substr(layer.name().size() + 1); }

void SetSource(Param* p, const std::string& path, std::string param) {
  p->init = ParamInit(ParamInit::Kind::kCheckpoint, 0.0f);
  p->init.checkpoint = Absolute(path);
  p->init.param = std::move(param);
  if (p->init.param.size() > 2 && p->init.param.compare(p->init.param.size() - 2, 2, "^T") == 0) {
    p->init.param.resize(p->init.param.size() - 2);
    p->init.transpose = true;
  }
}

}  // namespace

Status ReadParamFields(const Fields& fields, Layer* layer) {
  if (layer->params().empty()) {
    for (const char* key : {"init_from", "lr_mult"})
      if (fields.Has(key)) return fields.FieldError(key, "is set but the layer has no parameters");
    return Status::Ok();
  }
  double lr_mult;
  SHOAL_RETURN_IF_ERROR(fields.Float("lr_mult", 1.0, &lr_mult, 0.0, 1e3));
  for (Param& p : layer->params()) p.lr_mult = static_cast<float>(lr_mult);
  if (!fields.Has("init_from")) return Status::Ok();
  const nlohmann::json& node = fields.node().at("init_from");
  fields.Keep("init_from", node);
  std::string known;
  for (const Param& p : layer->params()) known += (known.empty() ? "" : ", ") + Suffix(*layer, p);
  if (node.is_string()) {
    const std::string text = node.get<std::string>();
    std::string path, source_layer;
    const bool named = SplitSource(text, &path, &source_layer);
    if (!named) path = text;
    if (path.empty()) return fields.FieldError("init_from", "names no checkpoint");
    for (Param& p : layer->params())
      SetSource(&p, path, named ? source_layer + "." + Suffix(*layer, p) : p.name);
    return Status::Ok();
  }
  if (!node.is_object())
    return fields.FieldError(
        "init_from",
        "must be a checkpoint (PATH or PATH:LAYER) or a mapping of parameters (" + known + ") to PATH:PARAM");
  for (const auto& [suffix, source] : node.items()) {
    Param* p = nullptr;
    for (Param& q : layer->params())
      if (Suffix(*layer, q) == suffix) p = &q;
    if (!p) return fields.FieldError("init_from", "names parameter '" + suffix + "'; the layer has " + known);
    std::string path, param;
    if (!source.is_string() || !SplitSource(source.get<std::string>(), &path, &param))
      return fields.FieldError("init_from", "'" + suffix + "' must be PATH:PARAM (PARAM^T transposed)");
    SetSource(p, path, param);
  }
  return Status::Ok();
}

Status LoadInitFrom(const std::string& name, const Shape& shape, const ParamInit& init,
                    std::vector<float>* values) {
  const std::string what = "parameter '" + name + "' (init_from '" + init.checkpoint + "')";
  Checkpoint merged;
  std::vector<std::string> files;
  Status loaded = LoadModel({init.checkpoint}, -1, &merged, &files);
  if (!loaded.ok()) return Status::InvalidArgument(what + ": " + loaded.message());
  for (const CheckpointTensor& t : merged.tensors) {
    if (t.role != "value" || t.param != init.param) continue;
    const Shape want = init.transpose && shape.size() == 2 ? Shape{shape[1], shape[0]} : shape;
    if ((init.transpose && shape.size() != 2) || t.shape != want)
      return Status::InvalidArgument(what + ": '" + init.param + "' is " + ShapeToString(t.shape) +
                                     ", the layer's is " + ShapeToString(shape) +
                                     (init.transpose ? " (transposed: ^T takes a 2-D one)" : ""));
    if (!init.transpose) {
      *values = t.data;
      return Status::Ok();
    }
    const int rows = t.shape[0], cols = t.shape[1];
    values->resize(t.data.size());
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c)
        (*values)[static_cast<size_t>(c) * rows + r] = t.data[static_cast<size_t>(r) * cols + c];
    return Status::Ok();
  }
  std::string have;
  for (const CheckpointTensor& t : merged.tensors)
    if (t.role == "value") have += (have.empty() ? "'" : ", '") + t.param + "'";
  return Status::InvalidArgument(what + ": the checkpoint has no parameter '" + init.param + "' (it has " +
                                 have + ")");
}

Status CheckInitFrom(const Param& param) {
  if (param.init.kind != ParamInit::Kind::kCheckpoint) return Status::Ok();
  std::vector<float> values;
  return LoadInitFrom(param.name, param.shape, param.init, &values);
}

}  // namespace shoal
