"""In-place operations on logits: numpy+numba (CPU), torch (CPU/CUDA) and Triton (GPU) back-ends."""
