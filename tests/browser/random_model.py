"""Random splat models as standard 3DGS .ply files, for the viewer's tests and benchmark."""
import array
import math
import random


def write_random_ply(path, n, sh_degree=0, scales=(0.005, 0.03), dc=(-1.5, 1.5), sh_sigma=0.3, seed=1):
    """n splats in a unit ball, scales uniform in `scales`, random rotations, DC coefficients uniform
    in `dc`; with sh_degree > 0, the higher bands' coefficients are normal with sh_sigma, so that the
    colour depends on the view. A splat's draws for degree 0 come first: for the same arguments but
    the degree, the models have the same splats."""
    rest = 3 * ((sh_degree + 1) ** 2 - 1)
    names = ['x', 'y', 'z', 'nx', 'ny', 'nz', 'f_dc_0', 'f_dc_1', 'f_dc_2']
    names += [f'f_rest_{i}' for i in range(rest)]
    names += ['opacity', 'scale_0', 'scale_1', 'scale_2', 'rot_0', 'rot_1', 'rot_2', 'rot_3']
    rng = random.Random(seed)
    values = array.array('f')
    for _ in range(n):
        while True:
            p = [rng.uniform(-1, 1) for _ in range(3)]
            if p[0] ** 2 + p[1] ** 2 + p[2] ** 2 <= 1:
                break
        q = [rng.gauss(0, 1) for _ in range(4)]
        colour = [rng.uniform(*dc) for _ in range(3)]
        opacity = rng.gauss(0, 1.5)
        log_scales = [math.log(rng.uniform(*scales)) for _ in range(3)]
        sh = [rng.gauss(0, sh_sigma) for _ in range(rest)]
        values.extend(p + [0, 0, 0] + colour + sh + [opacity] + log_scales + q)
    with open(path, 'wb') as f:
        header = ['ply', 'format binary_little_endian 1.0', f'element vertex {n}']
        header += [f'property float {name}' for name in names] + ['end_header']
        f.write(('\n'.join(header) + '\n').encode())
        values.tofile(f)
