"""Writes the small pickles snapshot's tests read. Standard library only.

    python3 snapshot/testdata/make.py   # from the repository root

Each file is a hand-made snapshot with known figures, pickled by Python's own
pickle module in one protocol, so the decoder is checked against the real
encoder rather than against itself.
"""
import collections
import gzip
import os
import pickle

HERE = os.path.dirname(os.path.abspath(__file__))

def frame(name, filename, line):
    return {'name': name, 'filename': filename, 'line': line}

STACK_A = [frame('forward', 'model.py', 54), frame('train_step', 'train.py', 120)]
STACK_CPP = [frame('torch::unwind::unwind()', '??', 0), frame('<module>', 'run.py', 2**64 - 1)]

def snapshot():
    """Two devices, a private pool, an expandable segment, a side stream,
    all three block states, and one event of every action."""
    seg0 = {
        'device': 0, 'address': 0x7f0000000000, 'total_size': 20971520,
        'allocated_size': 10485760, 'active_size': 12582912, 'requested_size': 12000000,
        'stream': 0, 'segment_type': 'large', 'segment_pool_id': (0, 0),
        'is_expandable': False, 'frames': STACK_A,
        'blocks': [
            {'address': 0x7f0000000000, 'size': 10485760, 'requested_size': 10000000,
             'state': 'active_allocated', 'frames': STACK_A},
            {'address': 0x7f0000a00000, 'size': 2097152, 'requested_size': 2000000,
             'state': 'active_pending_free', 'frames': STACK_CPP},
            {'address': 0x7f0000c00000, 'size': 8388608, 'requested_size': 7,
             'state': 'inactive', 'frames': []},
        ],
    }
    seg1 = {
        'device': 1, 'address': 0x7e0000000000, 'total_size': 2097152,
        'allocated_size': 512, 'active_size': 512, 'requested_size': 100,
        'stream': 140000000000000, 'segment_type': 'small', 'segment_pool_id': (1, 3),
        'is_expandable': True, 'frames': [],
        'blocks': [
            {'address': 0x7e0000000000, 'size': 512, 'requested_size': 100,
             'state': 'active_allocated', 'frames': STACK_A},
            {'address': 0x7e0000000200, 'size': 2096640, 'requested_size': 0,
             'state': 'inactive', 'frames': []},
        ],
    }
    t = 1700000000000000
    def ev(action, addr, size, stream=0, frames=STACK_A, dt=0, cc='N/A', um=''):
        e = {'action': action, 'addr': addr, 'size': size, 'stream': stream,
             'time_us': t + dt, 'compile_context': cc, 'user_metadata': um}
        if frames is not None:
            e['frames'] = frames
        return e
    oom = {'action': 'oom', 'device_free': 123456789, 'size': 41943040, 'stream': 0,
           'time_us': t + 9, 'compile_context': 'N/A', 'user_metadata': '', 'frames': STACK_CPP}
    dev0 = [
        ev('segment_alloc', 0x7f0000000000, 20971520, dt=1),
        ev('alloc', 0x7f0000000000, 10000000, dt=2),
        ev('alloc', 0x7f0000a00000, 2000000, dt=3, cc='Torch-Compiled Region: 0/0'),
        ev('free_requested', 0x7f0000a00000, 2000000, dt=4, frames=None),
        ev('snapshot', 0, 12000000, dt=5, frames=[]),
        ev('segment_map', 0x7f0002000000, 2097152, dt=6),
        ev('segment_unmap', 0x7f0002000000, 2097152, dt=7),
        ev('workspace_snapshot', 0, 0, dt=8, um='step 3'),
        oom,
    ]
    dev1 = [ev('alloc', 0x7e0000000000, 100, stream=140000000000000, dt=10),
            ev('free_completed', 0x7e0000000400, 64, stream=140000000000000, dt=11),
            ev('segment_free', 0x7e0000200000, 2097152, stream=140000000000000, dt=12)]
    return {
        'segments': [seg0, seg1],
        'device_traces': [dev0, dev1],
        'allocator_settings': {
            'PYTORCH_CUDA_ALLOC_CONF': 'expandable_segments:True',
            'max_split_size': -1, 'garbage_collection_threshold': 0.6,
            'expandable_segments': True, 'pinned_num_register_threads': 1,
            'release_lock_on_cudamalloc': False, 'pinned_use_cuda_host_register': False,
            'roundup_power2_divisions': {'1': 4, '2': 0},
        },
        'external_annotations': [
            {'stage': 'START', 'name': 'Optimizer.step#AdamW.step', 'device': 0, 'time_us': t},
            {'stage': 'END', 'name': 'Optimizer.step#AdamW.step', 'device': 0, 'time_us': t + 5},
        ],
    }

def legacy():
    """The 2.0 layout: blocks with history and no address, no pool id."""
    return {
        'segments': [{
            'device': 0, 'address': 4096 * 1024, 'total_size': 2097152,
            'allocated_size': 1024, 'active_size': 1024, 'requested_size': 1000,
            'stream': 0, 'segment_type': 'small',
            'blocks': [
                {'size': 1024, 'requested_size': 1000, 'state': 'active_allocated',
                 'history': [{'addr': 4096 * 1024, 'real_size': 1000, 'frames': STACK_A}]},
                {'size': 2096128, 'requested_size': 0, 'state': 'inactive', 'history': []},
            ]}],
        'device_traces': [[{'action': 'snapshot', 'addr': 0, 'size': 1024, 'stream': 0}]],
    }

def write(name, obj, protocol, gz=False):
    data = pickle.dumps(obj, protocol=protocol)
    if gz:
        data = gzip.compress(data, mtime=0)
    with open(os.path.join(HERE, name), 'wb') as f:
        f.write(data)

for p in (2, 3, 4, 5):
    write('hand-p%d.pickle' % p, snapshot(), p)
write('hand-p4.pickle.gz', snapshot(), 4, gz=True)
write('legacy-p4.pickle', legacy(), 4)
write('list-p4.pickle', snapshot()['segments'], 4)
def deep():
    """A 1500-frame stack (pickled as two APPENDS batches), the same content
    as a separate list object, and a list of frames and strings."""
    shared = [frame('f%d' % (i % 7), 'deep.py', i) for i in range(7)]
    deep_stack = [shared[i % 7] for i in range(1500)]
    copy = [dict(f) for f in deep_stack]          # same content, other objects
    mixed = [frame('g', 'g.py', 1), 'File "x.py", line 2, in h']
    seg = {'device': 0, 'address': 0, 'total_size': 1536, 'allocated_size': 1536,
           'active_size': 1536, 'requested_size': 1536, 'stream': 0, 'segment_type': 'small',
           'segment_pool_id': (0, 0), 'is_expandable': False, 'frames': deep_stack,
           'blocks': [{'address': a, 'size': 512, 'requested_size': 512, 'state': 'active_allocated',
                       'frames': fr} for a, fr in ((0, deep_stack), (512, copy), (1024, mixed))]}
    return {'segments': [seg], 'device_traces': [[]]}

# Hostile and wrong files.
write('ordereddict.pickle', collections.OrderedDict(a=1), 4)      # REDUCE/GLOBAL
write('not-a-snapshot.pickle', {'hello': [1, 2, 3]}, 4)
# Blocks that do not tile their segment: short of total_size, and a gap.
def seg(total, blocks):
    return [{'device': 0, 'address': 1 << 20, 'total_size': total, 'allocated_size': 0,
             'active_size': 0, 'requested_size': 0, 'stream': 0, 'segment_type': 'small',
             'segment_pool_id': (0, 0), 'is_expandable': False, 'frames': [], 'blocks': blocks}]
def blk(addr, size):
    return {'address': addr, 'size': size, 'requested_size': 0, 'state': 'inactive', 'frames': []}
write('bad-total.pickle', seg(1024, [blk(1 << 20, 512)]), 4)
write('bad-address.pickle', seg(1024, [blk(1 << 20, 512), blk((1 << 20) + 1024, 512)]), 4)
write('deep-p4.pickle', deep(), 4)
write('deep-p2.pickle', deep(), 2)
