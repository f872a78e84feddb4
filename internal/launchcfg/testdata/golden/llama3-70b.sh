#!/bin/bash
# Llama 3.1 70B pre-training with Megatron-LM on 64 nodes of 8 H100 GPUs, in
# FP8: the layout NVIDIA's DGX Cloud benchmarks run it at (tp 4, pp 4, 5
# virtual stages per rank, cp 2), written as a Megatron-LM launch script in
# the style of examples/llama/train_llama3_8b_h100_fp8.sh.

GPUS_PER_NODE=8
NUM_NODES=${SLURM_NNODES:-64}
NODE_RANK=${SLURM_NODEID:-0}
MASTER_ADDR=${MASTER_ADDR:-localhost}
CHECKPOINT_PATH=${1:-/checkpoints/llama3-70b}
TENSORBOARD_LOGS_PATH=${2:-/logs/llama3-70b}
SEQ_LENGTH=8192
MICRO_BATCH_SIZE=1
GLOBAL_BATCH_SIZE=1024

DISTRIBUTED_ARGS=(
    --nproc_per_node $GPUS_PER_NODE
    --nnodes $NUM_NODES
    --node_rank $NODE_RANK
    --master_addr $MASTER_ADDR
    --master_port 6000
)

MODEL_ARGS=(
    --use-mcore-models
    --num-layers 80
    --hidden-size 8192
    --ffn-hidden-size 28672
    --num-attention-heads 64
    --group-query-attention
    --num-query-groups 8
    --kv-channels 128
    --seq-length $SEQ_LENGTH
    --max-position-embeddings 131072
    --position-embedding-type rope
    --rotary-base 500000
    --use-rope-scaling
    --attention-dropout 0.0
    --hidden-dropout 0.0
    --swiglu
    --normalization RMSNorm
    --attention-backend fused
    --untie-embeddings-and-output-weights
    --disable-bias-linear
)

TRAINING_ARGS=(
    --micro-batch-size $MICRO_BATCH_SIZE
    --global-batch-size $GLOBAL_BATCH_SIZE
    --train-samples 244140625
    --lr 1.5e-4
    --min-lr 1.5e-5
    --lr-decay-style cosine
    --lr-warmup-samples 2048000
    --clip-grad 1.0
    --weight-decay 0.1
    --adam-beta1 0.9
    --adam-beta2 0.95
    --init-method-std 0.008
    --bf16
    --grad-reduce-in-bf16
    --cross-entropy-loss-fusion
    --manual-gc
)

DTYPE_ARGS=("--fp8-format hybrid" "--fp8-amax-history-len 1024" "--fp8-amax-compute-algo max" "--fp8-param-gather")

MODEL_PARALLEL_ARGS=(
    --tensor-model-parallel-size 4
    --pipeline-model-parallel-size 4
    --num-layers-per-virtual-pipeline-stage 5
    --context-parallel-size 2
    --sequence-parallel
    --tp-comm-overlap
    --use-distributed-optimizer
    --overlap-grad-reduce
    --overlap-param-gather
)

DATA_ARGS=(
    --mock-data
    --tokenizer-type NullTokenizer
    --vocab-size 128256
    --split '99,1,0'
    --num-workers 1
)

EVAL_AND_LOGGING_ARGS=(
    --log-interval 1
    --eval-iters 32
    --eval-interval 1000
    --save-interval 1000
    --save $CHECKPOINT_PATH
    --load $CHECKPOINT_PATH
    --tensorboard-dir $TENSORBOARD_LOGS_PATH
    --log-throughput
)

torchrun ${DISTRIBUTED_ARGS[@]} pretrain_gpt.py \
    ${MODEL_ARGS[@]} \
    ${TRAINING_ARGS[@]} \
    ${DTYPE_ARGS[@]} \
    ${MODEL_PARALLEL_ARGS[@]} \
    ${DATA_ARGS[@]} \
    ${EVAL_AND_LOGGING_ARGS[@]}
