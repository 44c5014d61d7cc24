"""The Python package against the CLI: the same runs, pixels, scores and messages.

Run by scripts/test_python.sh (CI): `import splat` from an installed package, the CLI at
$SPLAT_BINARY (default build/splat). One short demo run on the CPU backs every test.
"""
import os
import signal
import subprocess
from pathlib import Path

import numpy as np
import pytest

import splat

ROOT = Path(__file__).resolve().parents[2]
BINARY = os.environ.get("SPLAT_BINARY", str(ROOT / "build" / "splat"))
# Small enough for a few seconds of training on two cores.
SHORT = {"train__iterations": 200, "model__init_points": 2000, "densify__cap_max": 3000,
         "backend__type": "cpu"}


def cli(*args, ok=True):
    """Runs the CLI; returns (exit status, stdout, the message after "error: " on stderr)."""
    r = subprocess.run([BINARY, *map(str, args)], capture_output=True, text=True)
    assert (r.returncode == 0) == ok, r.stderr
    error = r.stderr.strip().split("error: ", 1)[-1] if r.returncode else ""
    return r.stdout, error


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("py") / "demo"
    seen = []
    run = splat.demo(out, progress=seen.append, train__log_every=50, **SHORT)
    return run, seen


@pytest.fixture(scope="module")
def scene(demo):
    return Path(demo[0].out) / "scene"


@pytest.fixture(scope="module")
def checkpoint(demo):
    return Path(demo[0].out) / "checkpoint.ckpt"


def test_demo_trains_on_the_cpu_and_reports_progress(demo):
    run, seen = demo
    assert [p.iteration for p in seen] == [50, 100, 150, 200]
    assert all(p.total == 200 and p.splats > 0 and np.isfinite(p.loss) for p in seen)
    assert seen[-1].loss < seen[0].loss
    assert run.metrics["iterations"] == 200 and run.metrics["backend"] == "cpu"
    assert run.metrics["psnr"] > 15
    for name in ("model.ply", "checkpoint.ckpt", "metrics.json", "config.toml", "report.html"):
        assert (Path(run.out) / name).is_file()
    assert run.model.device == "cpu" and len(run.model) == run.metrics["num_splats"]


def test_train_matches_the_cli_run(scene, tmp_path):
    overrides = {**SHORT, "train__iterations": 60}
    run = splat.train(scene, out=tmp_path / "py", config={"model": {"init_points": 1500}},
                      **overrides)
    sets = [a for k, v in overrides.items() for a in ("--set", f"{k.replace('__', '.')}={v}")]
    config = tmp_path / "c.toml"
    config.write_text("[model]\ninit_points = 1500\n")
    cli("train", scene, "--out", tmp_path / "cli", "--config", config, *sets)
    import json
    ref = json.loads((tmp_path / "cli" / "metrics.json").read_text())
    assert run.metrics["final_loss"] == ref["final_loss"]
    assert run.metrics["psnr"] == ref["psnr"]
    assert (tmp_path / "py" / "config.toml").read_text() == (tmp_path / "cli" / "config.toml").read_text()


def test_ctrl_c_stops_training_with_a_checkpoint_and_resumes(scene, tmp_path):
    def interrupt(p):
        if p.iteration == 40:
            os.kill(os.getpid(), signal.SIGINT)
    out = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        splat.train(scene, out=out, progress=interrupt, train__log_every=20, **SHORT)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # Python's again
    stopped = splat.load(out / "checkpoint.ckpt")
    assert len(stopped) > 0 and (out / "model.ply").is_file()
    assert not (out / "metrics.json").exists()
    run = splat.train(scene, out=out, resume=out / "checkpoint.ckpt", **SHORT)
    assert run.metrics["iterations"] == 200


def test_load_reads_every_format(checkpoint, tmp_path):
    ref = splat.load(checkpoint)
    n, k = len(ref), (ref.sh_degree + 1) ** 2
    assert ref.means.shape == (n, 3) and ref.log_scales.shape == (n, 3)
    assert ref.quats.shape == (n, 4) and ref.raw_opacity.shape == (n,)
    assert ref.sh.shape == (n, k, 3) and ref.means.dtype == np.float32
    for name in ("m.ply", "m.splat", "m.spz", "m.compressed.ply"):
        cli("export", checkpoint, "--out", tmp_path / name)
        model = splat.load(tmp_path / name)
        assert len(model) == n, name
        # The compact formats quantize (positions to well under a hundredth of the scene here)
        # and .splat orders the splats by size: each coordinate compared in sorted order.
        np.testing.assert_allclose(np.sort(model.means, axis=0), np.sort(ref.means, axis=0),
                                   atol=0.02, err_msg=name)
        mine = tmp_path / ("py_" + name)
        ref.export(mine)
        assert mine.read_bytes() == (tmp_path / name).read_bytes(), name
    np.testing.assert_array_equal(splat.load(tmp_path / "m.ply").means, ref.means)
    np.testing.assert_allclose(ref.opacities, 1 / (1 + np.exp(-np.asarray(ref.raw_opacity))))


def test_render_gives_the_pixels_of_the_cli(checkpoint, scene, tmp_path):
    cli("render", checkpoint, scene, "--out", tmp_path / "renders")
    model = splat.load(checkpoint)
    views = splat.load_dataset(scene).test
    assert len(views) > 0
    for view in views:
        png = splat.read_image(tmp_path / "renders" / f"{view.name}.png")
        expected = np.round(png * 255).astype(np.uint8)
        image = model.render(view.camera, dtype=np.uint8)
        assert image.shape == (view.camera.height, view.camera.width, 3)
        np.testing.assert_array_equal(image, expected, err_msg=view.name)
    # The float render is the PNG's before rounding; a second render and a camera from intrinsics
    # and a pose give the same pixels.
    c = views[0].camera
    assert c.t.shape == (3,) and c.t.strides == (8,) and c.R.strides == (24, 8)
    np.testing.assert_allclose(c.center, -c.R.T @ c.t, atol=1e-12)
    first = model.render(c)
    np.testing.assert_array_equal(np.floor(np.clip(first, 0, 1) * np.float32(255) + np.float32(0.5))
                                  .astype(np.uint8),
                                  model.render(c, dtype=np.uint8), err_msg="float against uint8")
    np.testing.assert_array_equal(model.render(c), first, err_msg="the same camera again")
    same = splat.Camera(c.width, c.height, c.fx, c.fy, c.cx, c.cy, R=c.R, t=c.t)
    np.testing.assert_array_equal(model.render(same), first, err_msg="the camera rebuilt")
    # On the CPU the arrays are the model: moving every splat away leaves the background alone.
    host = splat.load(checkpoint, device="cpu")
    host.means[:] += 100.0
    assert np.all(host.render(c) == 1.0)


def test_eval_gives_the_psnr_of_the_cli(checkpoint, scene, tmp_path):
    cli("eval", checkpoint, scene, "--out", tmp_path / "eval")
    import json
    expected = json.loads((tmp_path / "eval" / "metrics.json").read_text())
    assert splat.eval(checkpoint, scene) == expected
    by_model = splat.eval(splat.load(checkpoint), splat.load_dataset(scene))
    assert by_model["psnr"] == expected["psnr"] and by_model["ssim"] == expected["ssim"]
    train = splat.eval(checkpoint, scene, split="train")
    assert len(train["train_views"]) == len(splat.load_dataset(scene).train)


def test_config_is_checked_as_the_cli_checks_it(tmp_path):
    assert splat.config(train__iterations=7)["train"]["iterations"] == 7
    assert splat.config({"train": {"iterations": 7}})["train"]["iterations"] == 7
    assert splat.config(**{"densify.cap_max": 5})["densify"]["cap_max"] == 5
    # Overrides are --set: the same message, word for word.
    for assignment, value in (("train.iteratons", 5), ("trian.iterations", 5),
                              ("train.iterations", '"many"'), ("backend.type", '"gpu"')):
        _, message = cli("config", "--set", f"{assignment}={value}", ok=False)
        with pytest.raises(splat.Error) as e:
            splat.config(**{assignment: value if not isinstance(value, str) else value.strip('"')})
        assert str(e.value) == message
    # A dict is checked as a TOML file is: the file's message after its origin (file:line).
    for text, table in (("[train]\niteratons = 5\n", {"train": {"iteratons": 5}}),
                        ("[trian]\niterations = 5\n", {"trian": {"iterations": 5}}),
                        ("iterations = 5\n", {"iterations": 5}),
                        ("[train]\niterations = \"x\"\n", {"train": {"iterations": "x"}})):
        (tmp_path / "c.toml").write_text(text)
        _, message = cli("config", "--config", tmp_path / "c.toml", ok=False)
        with pytest.raises(splat.Error) as e:
            splat.config(table)
        assert str(e.value).split(": ", 1)[1] == message.split(": ", 1)[1], text
    with pytest.raises(splat.Error, match=r"unknown key 'train.iteratons' \(did you mean 'train.iterations'\?\)"):
        splat.config({"train": {"iteratons": 5}})
    with pytest.raises(splat.Error, match="lr_means_final = 0.001 is greater than"):
        splat.config({"train": {"lr_means": 0.0001, "lr_means_final": 0.001}})
    with pytest.raises(TypeError, match="section__key"):
        splat.config(iterations=5)


def test_a_bad_file_raises_the_cli_message(tmp_path):
    bad = tmp_path / "bad.ply"
    bad.write_bytes(b"ply\nformat ascii 1.0\nelement vertex 2\nend_header\n1 2\n")
    _, message = cli("export", bad, "--out", tmp_path / "x.spz", ok=False)
    with pytest.raises(splat.Error) as e:
        splat.load(bad)
    assert str(e.value) == message and str(bad) in message
    with pytest.raises(splat.Error) as e:
        splat.train(tmp_path / "missing")
    _, message = cli("train", tmp_path / "missing", ok=False)
    assert str(e.value) == message


def test_gpu_arrays_reach_torch_without_a_copy(checkpoint):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    model = splat.load(checkpoint, device="cuda")
    host = splat.load(checkpoint, device="cpu")
    means = torch.from_dlpack(model.means)
    assert means.is_cuda and means.data_ptr() == model.means.data_ptr
    np.testing.assert_array_equal(means.cpu().numpy(), host.means)
    np.testing.assert_array_equal(np.asarray(model.sh), host.sh)
