// splat._splat: the commands of the CLI (src/app) on Python objects. python/splat/__init__.py
// is the API people use; docs/python.md describes it. Nothing here computes what the CLI does
// another way: every call goes to the function the matching command calls.
#include <dlpack/dlpack.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <csignal>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/common.h"
#include "core/error.h"
#include "io/image_io.h"
#include "io/read_file.h"
#include "train/backend_factory.h"
#include "train/interrupt.h"
#if SPLAT_HAVE_CUDA
#include <cuda_runtime.h>

#include "cuda/cuda_backend.h"
#endif

namespace py = pybind11;
using namespace splat;

namespace {

// --config FILE (or the TOML text of a config dict) and --set KEY=VALUE, as the CLI takes them.
app::ConfigArgs config_args(const std::string& file,
                            const std::string& text,
                            const std::vector<std::string>& sets) {
  app::ConfigArgs args;
  args.config_file = file;
  args.config_text = text;
  args.sets = sets;
  return args;
}

// A model as splat.load gives it: on the CPU its parameters in host memory (the NumPy arrays view
// them); on the GPU (cuda backend) the backend holding them (the arrays view its device buffers).
struct Model {
  std::string path;
  Config cfg;              // the config it renders and evaluates with
  TrainState host;         // on the CPU
  app::ModelRenderer gpu;  // on the GPU: the backend that holds and renders the model; else null
  int sh_degree = 0;
  int device = 0;  // the CUDA device of gpu.backend

  bool on_gpu() const { return gpu.backend != nullptr; }
  std::size_t size() const { return on_gpu() ? gpu.backend->num_splats() : host.params.size(); }
  TrainState state() const { return on_gpu() ? gpu.backend->state() : host; }
};

std::shared_ptr<Model> load(const std::string& path, const app::ConfigArgs& args) {
  require_regular_file(path, "model");  // the CLI's check of MODEL
  auto m = std::make_shared<Model>();
  m->path = path;
  m->cfg = app::resolve_model_config(args, path);
  TrainState st = load_model(path);
  m->sh_degree = st.params.sh_degree;
  if (uses_cuda(m->cfg.backend)) {
    m->gpu = app::model_renderer(st, m->cfg);
#if SPLAT_HAVE_CUDA
    cudaGetDevice(&m->device);
#endif
  } else {
    m->host = std::move(st);
  }
  return m;
}

Image render(const Model& m, const Camera& camera) {
  if (m.on_gpu()) return m.gpu.backend->render(camera, m.gpu.settings);
  // The host arrays may have been changed in place: a renderer of what they hold now.
  const app::ModelRenderer r = app::model_renderer(m.host, m.cfg);
  return r.backend->render(camera, r.settings);
}

// ---- Arrays -------------------------------------------------------------------------------------

// The shape of parameter group `g` (Gaussians::for_each_group order) for n splats.
std::vector<py::ssize_t> group_shape(int g, std::size_t n, int sh_degree) {
  const auto N = py::ssize_t(n);
  switch (g) {
    case 0:
    case 1:
      return {N, 3};
    case 2:
      return {N, 4};
    case 3:
      return {N};
    default:
      return {N, py::ssize_t(sh_coeffs(sh_degree)), 3};
  }
}

std::vector<float>& host_group(Model& m, int g) {
  std::vector<float>* groups[] = {&m.host.params.means, &m.host.params.log_scales,
                                  &m.host.params.quats, &m.host.params.raw_opacity,
                                  &m.host.params.sh};
  return *groups[g];
}

// A parameter group of a model on the GPU: DLPack (__dlpack__, __dlpack_device__) hands the
// device buffer to PyTorch, CuPy or JAX without a copy; NumPy gets a copy (__array__).
struct DeviceArray {
  std::shared_ptr<Model> model;
  int group = 0;
  std::vector<py::ssize_t> shape() const {
    return group_shape(group, model->size(), model->sh_degree);
  }
  float* data() const {
#if SPLAT_HAVE_CUDA
    return const_cast<float*>(cuda::model_arrays(*model->gpu.backend)[std::size_t(group)].data);
#else
    throw Error("this build has no CUDA backend");
#endif
  }
};

py::array_t<float> to_numpy(const DeviceArray& a) {
  const Gaussians g = a.model->gpu.backend->params();
  std::vector<const std::vector<float>*> groups;
  g.for_each_group([&](const char*, const std::vector<float>& v) { groups.push_back(&v); });
  const std::vector<float>& v = *groups[std::size_t(a.group)];
  py::array_t<float> out(a.shape());
  std::memcpy(out.mutable_data(), v.data(), v.size() * sizeof(float));
  return out;
}

// The DLPack capsule of a device array; it keeps the model alive until the consumer is done.
py::capsule to_dlpack(const DeviceArray& a) {
  struct Owner {
    DLManagedTensor tensor;
    std::shared_ptr<Model> model;
    std::vector<std::int64_t> shape;
  };
  auto* o = new Owner{{}, a.model, {}};
  for (py::ssize_t s : a.shape()) o->shape.push_back(std::int64_t(s));
#if SPLAT_HAVE_CUDA
  // The backend writes its buffers on a stream of its own: finished before anyone reads them.
  if (cudaDeviceSynchronize() != cudaSuccess) {
    delete o;
    throw Error("CUDA: synchronizing before a DLPack export failed");
  }
#endif
  DLTensor& t = o->tensor.dl_tensor;
  t.data = a.data();
  t.device = {kDLCUDA, a.model->device};
  t.ndim = int(o->shape.size());
  t.dtype = {kDLFloat, 32, 1};
  t.shape = o->shape.data();
  t.strides = nullptr;  // compact, row-major
  t.byte_offset = 0;
  o->tensor.manager_ctx = o;
  o->tensor.deleter = [](DLManagedTensor* self) { delete static_cast<Owner*>(self->manager_ctx); };
  // A capsule still named "dltensor" when it is freed was never consumed: it frees the tensor.
  return py::capsule(&o->tensor, "dltensor", [](PyObject* capsule) {
    if (PyCapsule_IsValid(capsule, "dltensor")) {
      auto* t = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
      t->deleter(t);
    }
  });
}

// A parameter group: a NumPy array over the host memory on the CPU (kept alive by the model),
// a DeviceArray on the GPU.
py::object group_array(const std::shared_ptr<Model>& m, int g) {
  if (m->on_gpu()) return py::cast(DeviceArray{m, g});
  py::object owner = py::cast(m);
  return py::array_t<float>(group_shape(g, m->size(), m->sh_degree), host_group(*m, g).data(),
                            owner);
}

using Matrix = py::array_t<double, py::array::c_style | py::array::forcecast>;

// Camera.from_w2c and Camera.from_c2w_opengl: a 4x4 matrix (row-major) and the intrinsics.
auto from_matrix(
    Camera (*make)(const std::array<double, 16>&, int, int, double, double, double, double),
    std::string name) {
  return [make, name](const Matrix& matrix, int width, int height, double fx, double fy, double cx,
                      double cy) {
    if (matrix.size() != 16) throw Error("Camera: " + name + " must be a 4x4 matrix");
    std::array<double, 16> a;
    std::copy(matrix.data(), matrix.data() + 16, a.begin());
    return make(a, width, height, fx, fy, cx, cy);
  };
}

// Shaped as the image and matrix arrays are: array_t(count) gave, with the pybind11 of the GPU
// machine's PyTorch, a 3-vector that read its first value three times (Camera.t, so a camera
// rebuilt from c.t sat elsewhere).
py::array_t<double> vec3_array(const Vec3<double>& v) {
  py::array_t<double> a(std::vector<py::ssize_t>{3});
  for (int i = 0; i < 3; ++i) a.mutable_data()[i] = v[i];
  return a;
}

py::array image_array(const Image& img) {
  py::array_t<float> out({img.height, img.width, img.channels});
  std::memcpy(out.mutable_data(), img.data.data(), img.data.size() * sizeof(float));
  return out;
}

py::array image8_array(const Image8& img) {
  py::array_t<std::uint8_t> out({img.height, img.width, img.channels});
  std::memcpy(out.mutable_data(), img.data.data(), img.data.size());
  return out;
}

// ---- Training -----------------------------------------------------------------------------------

// Runs a training command with the GIL released. The command installs the CLI's SIGINT/SIGTERM
// handlers (train/interrupt.h): Ctrl-C stops training after the step in progress and writes the
// checkpoint, as in the CLI. Python's handlers come back afterwards, and the signal that stopped
// the run is raised again for them (KeyboardInterrupt for Ctrl-C).
int run_command(const std::function<int()>& command) {
  struct sigaction old_int {
  }, old_term{};
  sigaction(SIGINT, nullptr, &old_int);
  sigaction(SIGTERM, nullptr, &old_term);
  request_interrupt(0);  // a signal of an earlier run does not stop this one
  auto restore = [&] {
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
    request_interrupt(0);
  };
  int status = 0;
  try {
    py::gil_scoped_release nogil;
    status = command();
  } catch (...) {
    restore();
    throw;
  }
  restore();
  if (status > 128) {
    std::raise(status - 128);
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  }
  return status;
}

// The progress callback, every train.log_every steps and after the last (Trainer's progress hook),
// called with the GIL held. An exception in it ends the run as an error does.
std::function<void(const StepProgress&)> progress_hook(py::handle callback) {
  if (callback.is_none()) return {};
  return [callback](const StepProgress& p) {
    py::gil_scoped_acquire gil;
    callback(p);
  };
}

}  // namespace

PYBIND11_MODULE(_splat, m) {
  m.doc() = "splat's C++ core: the functions behind the CLI's commands (use the splat package)";
  py::register_exception<Error>(m, "Error");

  py::class_<Camera>(m, "Camera",
                     "A pinhole camera: world-to-camera R, t with OpenCV axes (x right, y "
                     "down, z forward).")
      .def(py::init([](int width, int height, double fx, double fy, double cx, double cy,
                       const Matrix& R, const Matrix& t) {
             if (R.size() != 9 || t.size() != 3)
               throw Error("Camera: R must be 3x3 and t 3 values (world to camera, OpenCV axes)");
             Camera c;
             c.width = width, c.height = height, c.fx = fx, c.fy = fy, c.cx = cx, c.cy = cy;
             for (int i = 0; i < 9; ++i) c.R[i / 3][i % 3] = R.data()[i];
             for (int i = 0; i < 3; ++i) c.t[i] = t.data()[i];
             return c;
           }),
           py::arg("width"), py::arg("height"), py::arg("fx"), py::arg("fy"), py::arg("cx"),
           py::arg("cy"), py::arg("R"), py::arg("t"))
      .def_static("from_c2w_opengl", from_matrix(&Camera::from_c2w_opengl, "c2w"), py::arg("c2w"),
                  py::arg("width"), py::arg("height"), py::arg("fx"), py::arg("fy"), py::arg("cx"),
                  py::arg("cy"))
      .def_static("from_w2c", from_matrix(&Camera::from_w2c, "w2c"), py::arg("w2c"),
                  py::arg("width"), py::arg("height"), py::arg("fx"), py::arg("fy"), py::arg("cx"),
                  py::arg("cy"))
      .def_readwrite("width", &Camera::width)
      .def_readwrite("height", &Camera::height)
      .def_readwrite("fx", &Camera::fx)
      .def_readwrite("fy", &Camera::fy)
      .def_readwrite("cx", &Camera::cx)
      .def_readwrite("cy", &Camera::cy)
      .def_property_readonly("R",
                             [](const Camera& c) {
                               py::array_t<double> r({3, 3});
                               for (int i = 0; i < 9; ++i) r.mutable_data()[i] = c.R[i / 3][i % 3];
                               return r;
                             })
      .def_property_readonly("t", [](const Camera& c) { return vec3_array(c.t); })
      .def_property_readonly("center", [](const Camera& c) { return vec3_array(c.center()); })
      .def("downscaled", &Camera::downscaled, py::arg("factor"));

  py::class_<View>(m, "View", "One posed image of a dataset: name, path, camera, image.")
      .def_readonly("name", &View::name)
      .def_readonly("path", &View::path)
      .def_readonly("camera", &View::camera)
      .def_property_readonly("image", [](py::object self) {
        const Image8& img = self.cast<const View&>().image;
        return py::array_t<std::uint8_t>({img.height, img.width, img.channels}, img.data.data(),
                                         self);
      });

  auto views = [](py::object self, const std::vector<View>& vs) {
    py::list out;
    for (const View& v : vs)
      out.append(py::cast(&v, py::return_value_policy::reference_internal, self));
    return out;
  };
  py::class_<Dataset, std::shared_ptr<Dataset>>(
      m, "Dataset", "A dataset as training loads it: its train and test views.")
      .def_property_readonly(
          "train",
          [views](py::object self) { return views(self, self.cast<const Dataset&>().train); })
      .def_property_readonly("test", [views](py::object self) {
        return views(self, self.cast<const Dataset&>().test);
      });

  m.def(
      "load_dataset",
      [](const std::string& path, const std::string& config_file, const std::string& config_text,
         const std::vector<std::string>& sets) {
        const Config cfg = app::resolve_config(config_args(config_file, config_text, sets));
        py::gil_scoped_release nogil;
        return std::make_shared<Dataset>(load_dataset(path, cfg));
      },
      py::arg("path"), py::arg("config_file"), py::arg("config_text"), py::arg("sets"));

  py::class_<DeviceArray>(m, "DeviceArray",
                          "A parameter group of a model on the GPU: DLPack without a copy "
                          "(torch.from_dlpack), a host copy through np.asarray.")
      .def_property_readonly("shape",
                             [](const DeviceArray& a) { return py::tuple(py::cast(a.shape())); })
      .def_property_readonly("dtype", [](const DeviceArray&) { return py::dtype::of<float>(); })
      .def_property_readonly("data_ptr",
                             [](const DeviceArray& a) { return std::uintptr_t(a.data()); })
      .def(
          "__dlpack__",
          [](const DeviceArray& a, py::object /*stream*/, py::object /*max_version*/,
             py::object /*dl_device*/, py::object /*copy*/) { return to_dlpack(a); },
          py::kw_only(), py::arg("stream") = py::none(), py::arg("max_version") = py::none(),
          py::arg("dl_device") = py::none(), py::arg("copy") = py::none())
      .def("__dlpack_device__",
           [](const DeviceArray& a) { return py::make_tuple(int(kDLCUDA), a.model->device); })
      .def(
          "__array__",
          [](const DeviceArray& a, py::object dtype, py::object /*copy*/) {
            py::array out = to_numpy(a);  // a copy either way
            return dtype.is_none() ? out : out.attr("astype")(dtype).cast<py::array>();
          },
          py::arg("dtype") = py::none(), py::arg("copy") = py::none())
      .def("numpy", &to_numpy);

  py::class_<Model, std::shared_ptr<Model>>(
      m, "Model",
      "3D Gaussians as stored: means, log_scales, quats (w, x, y, z), raw_opacity, sh [N, K, 3]; "
      "NumPy views on the CPU, DeviceArrays on the GPU (splat.load).")
      .def_readonly("path", &Model::path)
      .def_readonly("sh_degree", &Model::sh_degree)
      .def_property_readonly("device", [](const Model& m) { return m.on_gpu() ? "cuda" : "cpu"; })
      .def("__len__", &Model::size)
      .def_property_readonly("config", [](const Model& m) { return m.cfg.to_toml(); })
      .def_property_readonly("means",
                             [](const std::shared_ptr<Model>& m) { return group_array(m, 0); })
      .def_property_readonly("log_scales",
                             [](const std::shared_ptr<Model>& m) { return group_array(m, 1); })
      .def_property_readonly("quats",
                             [](const std::shared_ptr<Model>& m) { return group_array(m, 2); })
      .def_property_readonly("raw_opacity",
                             [](const std::shared_ptr<Model>& m) { return group_array(m, 3); })
      .def_property_readonly("sh",
                             [](const std::shared_ptr<Model>& m) { return group_array(m, 4); })
      .def(
          "_render",
          [](const Model& m, const Camera& camera, bool uint8) -> py::array {
            Image img;
            {
              py::gil_scoped_release nogil;
              img = render(m, camera);
            }
            return uint8 ? image8_array(to_image8(img)) : image_array(img);
          },
          py::arg("camera"), py::arg("uint8") = false)
      .def(
          "_export",
          [](const Model& m, const std::string& path, const std::string& format, int sh_degree) {
            py::gil_scoped_release nogil;
            app::export_model(viewer_params(m.state()), m.path, path, format, sh_degree);
          },
          py::arg("path"), py::arg("format"), py::arg("sh_degree"))
      .def(
          "_evaluate",
          [](const Model& m, py::object data, const std::string& split,
             const std::string& config_file, const std::string& config_text,
             const std::vector<std::string>& sets) {
            const Config cfg =
                app::resolve_config(config_args(config_file, config_text, sets), m.cfg);
            std::shared_ptr<Dataset> loaded;
            if (py::isinstance<Dataset>(data)) {
              loaded = data.cast<std::shared_ptr<Dataset>>();
            } else {
              const std::string path = data.cast<std::string>();
              py::gil_scoped_release nogil;
              loaded = std::make_shared<Dataset>(load_dataset(path, cfg));
            }
            const std::vector<View>& views = split == "train" ? loaded->train : loaded->test;
            if (views.empty())
              throw Error(py::str(data).cast<std::string>() + ": no " + split +
                          " views to evaluate on");
            std::string json;
            {
              py::gil_scoped_release nogil;
              json = app::eval_json(app::evaluate_model(m.state(), m.path, views, cfg, ""), m.path,
                                    split, config::alpha_max)
                         .dump();
            }
            return json;
          },
          py::arg("data"), py::arg("split"), py::arg("config_file"), py::arg("config_text"),
          py::arg("sets"));

  m.def(
      "load",
      [](const std::string& path, const std::string& config_file, const std::string& config_text,
         const std::vector<std::string>& sets) {
        const app::ConfigArgs args = config_args(config_file, config_text, sets);
        py::gil_scoped_release nogil;
        return load(path, args);
      },
      py::arg("path"), py::arg("config_file"), py::arg("config_text"), py::arg("sets"));

  m.def(
      "resolve_config",
      [](const std::string& config_file, const std::string& config_text,
         const std::vector<std::string>& sets) {
        return app::resolve_config(config_args(config_file, config_text, sets)).to_toml();
      },
      py::arg("config_file"), py::arg("config_text"), py::arg("sets"));

  py::class_<StepProgress>(m, "TrainProgress",
                           "What the progress line shows after a step: iteration, total, loss "
                           "(smoothed), splats.")
      .def_readonly("iteration", &StepProgress::iteration)
      .def_readonly("total", &StepProgress::total)
      .def_readonly("loss", &StepProgress::loss)
      .def_readonly("splats", &StepProgress::splats)
      .def("__repr__", [](const StepProgress& p) {
        return "TrainProgress(iteration=" + std::to_string(p.iteration) +
               ", total=" + std::to_string(p.total) + ", loss=" + std::to_string(p.loss) +
               ", splats=" + std::to_string(p.splats) + ")";
      });

  m.def("default_out_dir", &app::default_out_dir, py::arg("data"));

  m.def(
      "read_image",
      [](const std::string& path) {
        Image img;
        {
          py::gil_scoped_release nogil;
          img = read_image(path);
        }
        return image_array(img);
      },
      py::arg("path"));
  m.def(
      "write_png",
      [](const std::string& path,
         const py::array_t<float, py::array::c_style | py::array::forcecast>& pixels) {
        if (pixels.ndim() != 3)
          throw Error(path + ": write_png takes an [H, W, C] array, got " +
                      std::to_string(pixels.ndim()) + " dimensions");
        Image img(int(pixels.shape(1)), int(pixels.shape(0)), int(pixels.shape(2)));
        std::memcpy(img.data.data(), pixels.data(), img.data.size() * sizeof(float));
        py::gil_scoped_release nogil;
        write_png(path, img);
      },
      py::arg("path"), py::arg("pixels"));

  m.def(
      "train",
      [](const std::string& data, const std::string& out, const std::string& resume,
         const std::string& init_from, bool overwrite, const std::string& config_file,
         const std::string& config_text, const std::vector<std::string>& sets,
         py::object progress) {
        TrainRun run{.data = data, .out = out, .resume = resume, .init_from = init_from};
        run.overwrite = overwrite;
        run.on_step = progress_hook(progress);
        if (!resume.empty()) require_regular_file(resume, "checkpoint");
        if (!init_from.empty()) require_regular_file(init_from, "model");
        const app::ConfigArgs args = config_args(config_file, config_text, sets);
        return run_command([&] { return app::train_command(run, args, 0); });
      },
      py::arg("data"), py::arg("out"), py::arg("resume"), py::arg("init_from"),
      py::arg("overwrite"), py::arg("config_file"), py::arg("config_text"), py::arg("sets"),
      py::arg("progress"));

  m.def(
      "demo",
      [](const std::string& out, const std::string& config_file, const std::string& config_text,
         const std::vector<std::string>& sets, py::object progress) {
        TrainRun run{.out = out};
        run.on_step = progress_hook(progress);
        const app::ConfigArgs args = config_args(config_file, config_text, sets);
        return run_command([&] { return app::demo_command(run, args); });
      },
      py::arg("out"), py::arg("config_file"), py::arg("config_text"), py::arg("sets"),
      py::arg("progress"));
}
