"""Random splat models as standard 3DGS .ply files, for the viewer's tests and benchmark."""
import array
import math
import random


def random_splats(rng, n, sh_degree=0, scales=(0.005, 0.03), dc=(-1.5, 1.5), sh_sigma=0.3, centre=(0, 0, 0),
                  radii=(0, 1)):
    """n splats' property rows (write_ply's order): centres uniform in the ball of radius radii[1] about
    `centre` at least radii[0] from it, scales uniform in `scales`, random rotations, DC coefficients
    uniform in `dc` (one range, or one a channel); with sh_degree > 0, the higher bands' coefficients
    are normal with sh_sigma, so that the colour depends on the view."""
    rest = 3 * ((sh_degree + 1) ** 2 - 1)
    dcs = dc if isinstance(dc[0], (tuple, list)) else [dc] * 3
    inner = radii[0] / radii[1]
    rows = []
    for _ in range(n):
        while True:
            p = [rng.uniform(-1, 1) for _ in range(3)]
            if inner ** 2 <= p[0] ** 2 + p[1] ** 2 + p[2] ** 2 <= 1:
                break
        p = [c + radii[1] * x for c, x in zip(centre, p)]
        q = [rng.gauss(0, 1) for _ in range(4)]
        colour = [rng.uniform(*dcs[c]) for c in range(3)]
        opacity = rng.gauss(0, 1.5)
        log_scales = [math.log(rng.uniform(*scales)) for _ in range(3)]
        sh = [rng.gauss(0, sh_sigma) for _ in range(rest)]
        rows.append(p + [0, 0, 0] + colour + sh + [opacity] + log_scales + q)
    return rows


def write_ply(path, rows, sh_degree=0):
    rest = 3 * ((sh_degree + 1) ** 2 - 1)
    names = ['x', 'y', 'z', 'nx', 'ny', 'nz', 'f_dc_0', 'f_dc_1', 'f_dc_2']
    names += [f'f_rest_{i}' for i in range(rest)]
    names += ['opacity', 'scale_0', 'scale_1', 'scale_2', 'rot_0', 'rot_1', 'rot_2', 'rot_3']
    values = array.array('f')
    for row in rows:
        values.extend(row)
    with open(path, 'wb') as f:
        header = ['ply', 'format binary_little_endian 1.0', f'element vertex {len(rows)}']
        header += [f'property float {name}' for name in names] + ['end_header']
        f.write(('\n'.join(header) + '\n').encode())
        values.tofile(f)


def write_random_ply(path, n, sh_degree=0, scales=(0.005, 0.03), dc=(-1.5, 1.5), sh_sigma=0.3, seed=1):
    """n random splats in a unit ball (random_splats). A splat's draws for degree 0 come first: for the
    same arguments but the degree, the models have the same splats."""
    write_ply(path, random_splats(random.Random(seed), n, sh_degree, scales, dc, sh_sigma), sh_degree)
