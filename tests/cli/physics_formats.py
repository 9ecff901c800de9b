#!/usr/bin/env python3
"""physics_formats.py: independent readers of the files the physics commands
write, for the tests (standard library only; nothing shared with the C
writers): Wavefront OBJ, ASCII PLY, legacy VTK POLYDATA (ASCII), ParaView
.pvd collections and the CSV files.

Each reader returns plain Python structures and raises ValueError on
anything it does not understand, so a malformed file fails the test that
reads it.
"""
import xml.etree.ElementTree as ET


def read_obj(path):
    """{'v': [(x,y,z)], 'color': [(r,g,b)] or None, 'vt': [(u,v)], 'vn':
    [(x,y,z)], 'f': [[(vi, ti, ni), ...]] (0-based, None when absent)}."""
    v, col, vt, vn, f = [], [], [], [], []
    for line in open(path):
        t = line.split("#", 1)[0].split()
        if not t:
            continue
        if t[0] == "v":
            if len(t) not in (4, 7):
                raise ValueError("%s: vertex line %r" % (path, line))
            v.append(tuple(float(x) for x in t[1:4]))
            if len(t) == 7:
                col.append(tuple(float(x) for x in t[4:7]))
        elif t[0] == "vt":
            vt.append(tuple(float(x) for x in t[1:3]))
        elif t[0] == "vn":
            vn.append(tuple(float(x) for x in t[1:4]))
        elif t[0] == "f":
            face = []
            for c in t[1:]:
                parts = c.split("/")
                idx = [int(p) - 1 if p else None for p in parts] + [None] * (3 - len(parts))
                face.append(tuple(idx[:3]))
            f.append(face)
    if col and len(col) != len(v):
        raise ValueError("%s: colours on some vertices only" % path)
    return {"v": v, "color": col or None, "vt": vt, "vn": vn, "f": f}


def read_ply(path):
    """{'comments': [...], 'vertex': {prop: [values]}, 'vertex_props': [names],
    'faces': [[i, ...]], 'face_lists': {name: [[...]]}} for format ascii 1.0."""
    with open(path) as fh:
        lines = fh.read().split("\n")
    if lines[0].strip() != "ply":
        raise ValueError("%s: not a PLY file" % path)
    elems, comments, k = [], [], 1
    while True:
        t = lines[k].split()
        k += 1
        if not t:
            continue
        if t[0] == "format":
            if t[1:] != ["ascii", "1.0"]:
                raise ValueError("%s: format %r" % (path, t[1:]))
        elif t[0] == "comment":
            comments.append(" ".join(t[1:]))
        elif t[0] == "element":
            elems.append({"name": t[1], "count": int(t[2]), "props": []})
        elif t[0] == "property":
            if t[1] == "list":
                elems[-1]["props"].append((t[4], "list", t[2], t[3]))
            else:
                elems[-1]["props"].append((t[2], t[1]))
        elif t[0] == "end_header":
            break
        else:
            raise ValueError("%s: header line %r" % (path, lines[k - 1]))
    out = {"comments": comments, "vertex": {}, "vertex_props": [], "faces": [], "face_lists": {},
           "vertex_types": {}}
    for e in elems:
        for _ in range(e["count"]):
            t = lines[k].split()
            k += 1
            pos = 0
            for p in e["props"]:
                if p[1] == "list":
                    n = int(t[pos])
                    vals = t[pos + 1:pos + 1 + n]
                    if len(vals) != n:
                        raise ValueError("%s: short list" % path)
                    pos += 1 + n
                    conv = float if p[3] in ("float", "double", "float32", "float64") else int
                    if e["name"] == "face" and p[0] in ("vertex_indices", "vertex_index"):
                        out["faces"].append([int(x) for x in vals])
                    elif e["name"] == "face":
                        out["face_lists"].setdefault(p[0], []).append([conv(x) for x in vals])
                else:
                    conv = float if p[1] in ("float", "double", "float32", "float64") else int
                    val = conv(t[pos])
                    pos += 1
                    if e["name"] == "vertex":
                        out["vertex"].setdefault(p[0], []).append(val)
            if pos != len(t):
                raise ValueError("%s: element %s has %d values, expected %d" % (path, e["name"], len(t), pos))
        if e["name"] == "vertex":
            out["vertex_props"] = [p[0] for p in e["props"]]
            out["vertex_types"] = {p[0]: p[1] for p in e["props"]}
    if any(x.strip() for x in lines[k:]):
        raise ValueError("%s: data after the last element" % path)
    return out


def read_vtk(path):
    """Legacy ASCII POLYDATA: {'title', 'points': [(x,y,z)], 'polygons':
    [[i,...]], 'vertices': [[i]], 'point_data': {name: (kind, [values])}}
    with kind SCALARS/VECTORS/NORMALS/TEXTURE_COORDINATES/COLOR_SCALARS."""
    with open(path) as fh:
        lines = fh.read().split("\n")
    if not lines[0].startswith("# vtk DataFile Version"):
        raise ValueError("%s: not a legacy VTK file" % path)
    title = lines[1]
    if lines[2].strip() != "ASCII" or lines[3].split() != ["DATASET", "POLYDATA"]:
        raise ValueError("%s: not ASCII POLYDATA" % path)
    toks = " ".join(lines[4:]).split()
    pos = 0

    def take(n):
        nonlocal pos
        out = toks[pos:pos + n]
        if len(out) != n:
            raise ValueError("%s: file ends early" % path)
        pos += n
        return out

    out = {"title": title, "points": [], "polygons": [], "vertices": [], "point_data": {}}
    npts = None
    while pos < len(toks):
        kw = take(1)[0]
        if kw == "POINTS":
            npts, _typ = int(take(1)[0]), take(1)[0]
            vals = [float(x) for x in take(3 * npts)]
            out["points"] = [tuple(vals[3 * i:3 * i + 3]) for i in range(npts)]
        elif kw in ("POLYGONS", "VERTICES"):
            n, size = int(take(1)[0]), int(take(1)[0])
            cells, used = [], 0
            for _ in range(n):
                m = int(take(1)[0])
                cells.append([int(x) for x in take(m)])
                used += m + 1
            if used != size:
                raise ValueError("%s: %s size %d, cells use %d" % (path, kw, size, used))
            out["polygons" if kw == "POLYGONS" else "vertices"] = cells
        elif kw == "POINT_DATA":
            if int(take(1)[0]) != npts:
                raise ValueError("%s: POINT_DATA count" % path)
        elif kw == "SCALARS":
            name, _typ, ncomp = take(1)[0], take(1)[0], int(take(1)[0])
            if take(2) != ["LOOKUP_TABLE", "default"]:
                raise ValueError("%s: SCALARS %s without the default lookup table" % (path, name))
            vals = [float(x) for x in take(ncomp * npts)]
            out["point_data"][name] = ("SCALARS", vals)
        elif kw in ("VECTORS", "NORMALS"):
            name, _typ = take(1)[0], take(1)[0]
            vals = [float(x) for x in take(3 * npts)]
            out["point_data"][name] = (kw, [tuple(vals[3 * i:3 * i + 3]) for i in range(npts)])
        elif kw == "TEXTURE_COORDINATES":
            name, dim, _typ = take(1)[0], int(take(1)[0]), take(1)[0]
            vals = [float(x) for x in take(dim * npts)]
            out["point_data"][name] = (kw, [tuple(vals[dim * i:dim * i + dim]) for i in range(npts)])
        elif kw == "COLOR_SCALARS":
            name, dim = take(1)[0], int(take(1)[0])
            vals = [float(x) for x in take(dim * npts)]
            out["point_data"][name] = (kw, [tuple(vals[dim * i:dim * i + dim]) for i in range(npts)])
        else:
            raise ValueError("%s: unknown keyword %r" % (path, kw))
    return out


def read_pvd(path):
    """[(timestep, file)] of a ParaView collection."""
    root = ET.parse(path).getroot()
    if root.tag != "VTKFile" or root.get("type") != "Collection":
        raise ValueError("%s: not a VTK collection" % path)
    coll = root.find("Collection")
    return [(float(d.get("timestep")), d.get("file")) for d in coll.findall("DataSet")]


def read_csv(path):
    """(header, rows of floats)."""
    lines = [l for l in open(path).read().split("\n") if l.strip()]
    head = lines[0].split(",")
    rows = [[float(x) for x in l.split(",")] for l in lines[1:]]
    for r in rows:
        if len(r) != len(head):
            raise ValueError("%s: row of %d values, header %d" % (path, len(r), len(head)))
    return head, rows
