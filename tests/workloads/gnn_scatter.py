"""A graph network written by hand (no PyG): each batch is several random graphs
merged into one edge list (node offsets added, as PyG's batching does); message
passing with index_select on the edges and index_add_ into the nodes, three
layers, mean pooling per graph by index_add_ and counts, graph classification."""
import torch
import torch.nn as nn

from common import IterClock, parse_args


def random_graph(g):
    n = int(torch.randint(40, 120, (1,), generator=g))
    e = n * 6
    src = torch.randint(0, n, (e,), generator=g)
    dst = torch.randint(0, n, (e,), generator=g)
    return torch.randn(n, 32, generator=g), torch.stack([src, dst]), int(torch.randint(0, 2, (1,), generator=g))


def batch_graphs(graphs):
    xs, edges, owner, labels, offset = [], [], [], [], 0
    for k, (x, e, y) in enumerate(graphs):
        xs.append(x)
        edges.append(e + offset)
        owner.append(torch.full((x.shape[0],), k, dtype=torch.long))
        labels.append(y)
        offset += x.shape[0]
    return torch.cat(xs), torch.cat(edges, 1), torch.cat(owner), torch.tensor(labels)


class Layer(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.msg = nn.Linear(2 * d, d)
        self.upd = nn.Linear(2 * d, d)

    def forward(self, x, edges):
        src, dst = edges
        m = torch.relu(self.msg(torch.cat([x.index_select(0, src), x.index_select(0, dst)], 1)))
        agg = torch.zeros_like(x).index_add_(0, dst, m)
        return torch.relu(self.upd(torch.cat([x, agg], 1)))


class GNN(nn.Module):
    def __init__(self, d=32):
        super().__init__()
        self.layers = nn.ModuleList([Layer(d) for _ in range(3)])
        self.head = nn.Linear(d, 2)

    def forward(self, x, edges, owner, n_graphs):
        for layer in self.layers:
            x = layer(x, edges)
        pooled = torch.zeros(n_graphs, x.shape[1]).index_add_(0, owner, x)
        counts = torch.zeros(n_graphs).index_add_(0, owner, torch.ones(x.shape[0]))
        return self.head(pooled / counts[:, None])


def main():
    args = parse_args(__doc__, iters=20, batch=8)
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    dataset = [random_graph(g) for _ in range(400)]
    model = GNN()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    clock = IterClock(args)
    k = 0
    while clock.more():
        graphs = [dataset[(k + j) % len(dataset)] for j in range(args.batch)]
        k += args.batch
        x, edges, owner, y = batch_graphs(graphs)
        loss = nn.functional.cross_entropy(model(x, edges, owner, len(graphs)), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        clock.tick(len(graphs))
    clock.done()


if __name__ == "__main__":
    main()
