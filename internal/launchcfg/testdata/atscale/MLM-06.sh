#!/bin/bash
# MLM-06: the 119B GPT of Megatron-LM's weak-scaling table (README, Megatron-Core
# r0.8.0) on 192 nodes of 8 H100 GPUs, written for dcpsim's round-trip test
# from validation/atscale.csv's settings for the row, in the style of
# Megatron-LM's examples/gpt3 launch script.

GPUS_PER_NODE=8
NUM_NODES=192
CHECKPOINT_PATH=$1
DATA_PATH=$2

DISTRIBUTED_ARGS=(
    --nproc_per_node $GPUS_PER_NODE
    --nnodes $NUM_NODES
    --master_addr ${MASTER_ADDR:-localhost}
    --master_port 6000
)

GPT_MODEL_ARGS=(
    --num-layers 92
    --hidden-size 10240
    --num-attention-heads 80
    --seq-length 4096
    --max-position-embeddings 4096
    --attention-backend auto # FlashAttention through Transformer Engine
)

TRAINING_ARGS=(
    --micro-batch-size 1
    --global-batch-size 768
    --train-iters 500000
    --weight-decay 0.1
    --adam-beta1 0.9
    --adam-beta2 0.95
    --init-method-std 0.006
    --clip-grad 1.0
    --bf16
    --lr 6.0e-5
    --lr-decay-style cosine
    --min-lr 6.0e-6
    --lr-warmup-fraction .001
    --lr-decay-iters 430000
    --use-distributed-optimizer
    --overlap-grad-reduce
    --overlap-param-gather
)

MODEL_PARALLEL_ARGS=(
    --tensor-model-parallel-size 8
    --pipeline-model-parallel-size 4
    --sequence-parallel
    --tp-comm-overlap
)

DATA_ARGS=(
    --data-path $DATA_PATH
    --vocab-size 131072
    --mock-data
    --split 949,50,1
)

EVAL_AND_LOGGING_ARGS=(
    --log-interval 100
    --save-interval 10000
    --eval-interval 1000
    --save $CHECKPOINT_PATH
    --load $CHECKPOINT_PATH
    --eval-iters 10
    --tensorboard-dir $CHECKPOINT_PATH/tensorboard
)

torchrun ${DISTRIBUTED_ARGS[@]} pretrain_gpt.py \
    ${GPT_MODEL_ARGS[@]} \
    ${TRAINING_ARGS[@]} \
    ${MODEL_PARALLEL_ARGS[@]} \
    ${DATA_ARGS[@]} \
    ${EVAL_AND_LOGGING_ARGS[@]}
