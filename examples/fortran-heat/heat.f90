! Example: the 2-D heat stencil of examples/heat protected from Fortran through pmlab's
! ISO_C_BINDING module (pmlab.f90), checked bit for bit against the same loop unprotected.
!
!   fortran_heat POOL [N STEPS BS]   (threads: OMP_NUM_THREADS; PMLAB_LOOP_KILL_AT=K kills at K)
!
! The grid is row-major as in the C++ and C examples: element (i, j), 0-based, is g(j, i) here,
! so region k (rows 1 + k*bs ...) is one contiguous chunk of each array.
module heat_state
  use, intrinsic :: iso_c_binding
  use pmlab
  implicit none
  real(c_double), parameter :: alpha = 0.1_c_double
  integer(c_int64_t) :: n = 64, steps = 10, bs = 8
  real(c_double), pointer :: pa(:, :) => null(), pb(:, :) => null()
contains

  subroutine init_grid(g)
    real(c_double), intent(out) :: g(0:n - 1, 0:n - 1)
    integer(c_int64_t) :: i, j
    do i = 0, n - 1
      do j = 0, n - 1
        g(j, i) = real(mod((i * n + j) * 2654435761_c_int64_t, 1000_c_int64_t), c_double)
      end do
    end do
  end subroutine init_grid

  ! Rows [i0, i1) of one step, from u to v.
  subroutine sweep_rows(u, v, i0, i1)
    real(c_double), intent(in) :: u(0:n - 1, 0:n - 1)
    real(c_double), intent(inout) :: v(0:n - 1, 0:n - 1)
    integer(c_int64_t), intent(in) :: i0, i1
    integer(c_int64_t) :: i, j
    do i = i0, i1 - 1
      do j = 1, n - 2
        v(j, i) = u(j, i) + alpha * (u(j, i - 1) + u(j, i + 1) + u(j - 1, i) + u(j + 1, i) &
                                     - 4 * u(j, i))
      end do
    end do
  end subroutine sweep_rows

  ! [protection] what protecting the loop adds (to the end marker; check-examples counts it)
  integer(c_int) function init(user, loop) bind(c)
    type(c_ptr), value :: user, loop
    real(c_double), pointer :: g(:, :)
    call c_f_pointer(pmlab_loop_array(loop, c_str("a")), g, [n, n])
    call init_grid(g)
    call c_f_pointer(pmlab_loop_array(loop, c_str("b")), g, [n, n])
    call init_grid(g)
    init = 0
  end function init

  integer(c_int) function band(user, t, k) bind(c)
    type(c_ptr), value :: user
    integer(c_int64_t), value :: t, k
    if (mod(t, 2_c_int64_t) == 0) then
      call sweep_rows(pa, pb, 1 + k * bs, min(n - 1, 1 + (k + 1) * bs))
    else
      call sweep_rows(pb, pa, 1 + k * bs, min(n - 1, 1 + (k + 1) * bs))
    end if
    band = 0
  end function band

  subroutine check(rc, loop, what)
    integer(c_int), intent(in) :: rc
    type(c_ptr), intent(in) :: loop
    character(len=*), intent(in) :: what
    if (rc == PMLAB_OK) return
    write (0, '(a)') 'fortran_heat: ' // what // ': ' // pmlab_status_name(rc) // ': ' // &
      pmlab_error_message(loop)
    if (rc == PMLAB_E_INVALID) error stop 2
    error stop 3
  end subroutine check
  ! [end]

end module heat_state

program fortran_heat
  use heat_state
  implicit none
  character(len=4096) :: path, arg
  integer(c_int64_t), target :: params(3) ! [protection] [end]
  type(c_ptr) :: loop ! [protection] [end]
  type(pmlab_report) :: r ! [protection] [end]
  real(c_double), allocatable :: g0(:, :), g1(:, :)
  integer(c_int64_t) :: t
  logical :: same

  if (command_argument_count() /= 1 .and. command_argument_count() /= 4) then
    write (0, '(a)') 'usage: fortran_heat POOL [N STEPS BS]'
    error stop 2
  end if
  call get_command_argument(1, path)
  if (command_argument_count() == 4) then
    call get_command_argument(2, arg)
    read (arg, *) n
    call get_command_argument(3, arg)
    read (arg, *) steps
    call get_command_argument(4, arg)
    read (arg, *) bs
  end if
  if (n < 3 .or. steps < 1 .or. bs < 1 .or. bs > n - 2) then
    write (0, '(a)') 'fortran_heat: needs N >= 3, STEPS >= 1 and 1 <= BS <= N - 2'
    error stop 2
  end if
  params = [n, steps, bs] ! [protection] [end]

  ! [protection] The protected loop: describe, open (or create), run (or recover, resume).
  loop = pmlab_loop_new()
  call check(pmlab_loop_add_array(loop, c_str("a"), n * n), loop, 'array a')
  call check(pmlab_loop_add_array(loop, c_str("b"), n * n), loop, 'array b')
  call check(pmlab_loop_set_layout(loop, steps, c_str("b,a"), n, n * n - n, bs * n), loop, &
             'layout')
  call check(pmlab_loop_set_params(loop, c_loc(params), c_sizeof(params)), loop, 'params')
  call check(pmlab_loop_set_option(loop, c_str("name"), c_str("fortran-heat")), loop, 'name')
  call check(pmlab_loop_open(loop, c_str(path), c_funloc(init), c_null_ptr), loop, 'open')
  call c_f_pointer(pmlab_loop_array(loop, c_str("a")), pa, [n, n])
  call c_f_pointer(pmlab_loop_array(loop, c_str("b")), pb, [n, n])
  call check(pmlab_loop_run(loop, c_funloc(band), c_null_ptr, r), loop, 'run')
  ! [end]
  write (*, '(a,i0,a,i0,a,i0,a,i0,a)') 'fortran_heat n=', n, ' steps=', steps, ' bs=', bs, ': ', &
    pmlab_loop_regions(loop), ' regions per step'
  if (r%already_done /= 0) write (*, '(a)') '  the pool holds a completed run (already complete)'
  if (r%resumed /= 0) write (*, '(a,i0,a,i0,a,i0,a,i0,a,i0)') '  recovered: ', &
    r%regions_validated, ' regions validated, ', r%regions_inconsistent, ' inconsistent, ', &
    r%regions_unwritten, ' never written, ', r%regions_recomputed, &
    ' recomputed; resumed at step ', r%resume_phase

  ! The unprotected loop, for the bit-for-bit comparison (transfer compares the bits).
  allocate (g0(n, n), g1(n, n))
  call init_grid(g0)
  call init_grid(g1)
  do t = 0, steps - 1
    if (mod(t, 2_c_int64_t) == 0) then
      call sweep_rows(g0, g1, 1_c_int64_t, n - 1)
    else
      call sweep_rows(g1, g0, 1_c_int64_t, n - 1)
    end if
  end do
  if (mod(steps, 2_c_int64_t) == 0) then
    same = all(transfer(g0, 1_c_int64_t, size(g0)) == transfer(pa, 1_c_int64_t, size(pa)))
  else
    same = all(transfer(g1, 1_c_int64_t, size(g1)) == transfer(pb, 1_c_int64_t, size(pb)))
  end if
  call pmlab_loop_free(loop) ! [protection] [end]
  if (same) then
    write (*, '(a)') '  verify: OK'
  else
    write (*, '(a)') '  verify: FAILED'
    error stop 1
  end if
end program fortran_heat
